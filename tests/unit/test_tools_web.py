"""Web tools against local servers only: never the internet.

The fetch tests reach their loopback site through the operator's opt-in
(``fetch_local``); without it fetch_url refuses this machine's addresses
(tests/unit/test_fetch_confined.py).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from roles.claims.evidence import parse_evidence
from roles.tools import Toolbox, ToolboxConfig, ToolError
from roles.tools.web import html_to_text

DDG_PAGE = """<html><body>
<div class="result"><a rel="nofollow" class="result__a"
 href="https://duckduckgo.com/y.js?ad_domain=ad.example&amp;u3=1">Ad</a>
<a class="result__snippet" href="y">Buy now</a></div>
<div class="result"><h2><a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.python.org%2F3%2F&amp;rut=abc">
 The <b>Python</b> docs</a></h2>
<a class="result__snippet" href="x">Official &amp; complete <b>reference</b>.</a></div>
</body></html>"""


class Site:
    """A local HTTP server answering every path with one scripted response."""

    def __init__(self, body=b"", ctype="text/html; charset=utf-8", status=200, delay=0):
        self.body, self.ctype, self.status, self.delay = body, ctype, status, delay
        self.closing = threading.Event()
        self.requests: list[tuple[str, str, dict, bytes]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                site.requests.append(
                    (self.command, self.path, dict(self.headers), data)
                )
                # A slow site: the answer waits for the delay or for close().
                site.closing.wait(timeout=site.delay)
                self.send_response(site.status)
                if site.ctype:
                    self.send_header("Content-Type", site.ctype)
                self.send_header("Content-Length", str(len(site.body)))
                self.end_headers()
                self.wfile.write(site.body)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def site():
    servers = []

    def start(*args, **kwargs):
        servers.append(Site(*args, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_search_failure_says_search_unavailable_do_not_guess(tmp_path, closed_port):
    toolbox = Toolbox(tmp_path, ToolboxConfig(search_url=closed_port))
    with pytest.raises(ToolError) as err:
        toolbox.call("search", {"query": "python"})
    assert str(err.value).startswith("search unavailable — do not guess")
    assert "network error" in str(err.value)
    assert parse_evidence(toolbox.evidence[0]).output.startswith(
        "ERROR: search unavailable"
    )


def test_search_on_an_http_error_is_unavailable(tmp_path, site):
    server = site(b"busy", status=503)
    with pytest.raises(ToolError, match="search unavailable — do not guess .HTTP 503"):
        Toolbox(tmp_path, ToolboxConfig(search_url=server.url)).call(
            "search", {"query": "python"}
        )


def test_search_parses_duckduckgo_results_and_skips_adverts(tmp_path, site):
    server = site(DDG_PAGE.encode())
    text = Toolbox(tmp_path, ToolboxConfig(search_url=server.url)).call(
        "search", {"query": "py docs"}
    )
    assert text == (
        "The Python docs\nOfficial & complete reference.\nhttps://docs.python.org/3/"
    )
    assert server.requests[0][1] == "/?q=py+docs"


def test_search_on_a_page_without_results_list_is_unavailable(tmp_path, site):
    server = site(b"<html>Please verify you are human</html>")
    with pytest.raises(ToolError, match="search unavailable"):
        Toolbox(tmp_path, ToolboxConfig(search_url=server.url)).call(
            "search", {"query": "x"}
        )


def test_search_uses_serper_when_a_key_is_set(tmp_path, site):
    organic = [{"title": "T", "snippet": "S", "link": "https://t.example"}]
    server = site(json.dumps({"organic": organic}).encode(), ctype="application/json")
    toolbox = Toolbox(
        tmp_path, ToolboxConfig(serper_api_key="k-123", serper_url=server.url)
    )
    assert toolbox.call("search", {"query": "q"}) == "T\nS\nhttps://t.example"
    method, _, headers, body = server.requests[0]
    assert method == "POST" and headers["X-Api-Key"] == "k-123"
    assert json.loads(body) == {"q": "q", "num": 10}


def test_fetch_url_extracts_the_visible_text(tmp_path, site):
    page = (
        b"<html><head><title>t</title><script>var x=1;</script></head><body>"
        b"<h1>Title</h1><p>First &amp; second</p><style>p{}</style></body></html>"
    )
    server = site(page)
    text = Toolbox(tmp_path, ToolboxConfig(fetch_local=True)).call(
        "fetch_url", {"url": server.url}
    )
    assert text == "Title\nFirst & second"


def test_fetch_url_returns_plain_text_as_is(tmp_path, site):
    server = site(b"line one\nline two", ctype="text/plain")
    assert (
        Toolbox(tmp_path, ToolboxConfig(fetch_local=True)).call(
            "fetch_url", {"url": server.url}
        )
        == "line one\nline two"
    )


def test_fetch_url_caps_the_size(tmp_path, site):
    server = site(b"a" * 5000, ctype="text/plain")
    toolbox = Toolbox(tmp_path, ToolboxConfig(fetch_max_bytes=100, fetch_local=True))
    toolbox.call("fetch_url", {"url": server.url})
    assert toolbox.records[-1].output == "a" * 100 + "\n[page truncated at 100 bytes]"


def test_fetch_url_refuses_other_schemes(tmp_path):
    with pytest.raises(ToolError, match="http or https URLs only"):
        Toolbox(tmp_path).call("fetch_url", {"url": "file:///etc/passwd"})


def test_fetch_url_on_a_closed_port_is_a_clear_failure(tmp_path, closed_port):
    with pytest.raises(ToolError, match="fetch failed for .*network error.*refused"):
        Toolbox(tmp_path, ToolboxConfig(fetch_local=True)).call(
            "fetch_url", {"url": closed_port}
        )


def test_fetch_url_times_out(tmp_path, site):
    server = site(b"late", ctype="text/plain", delay=2)
    toolbox = Toolbox(tmp_path, ToolboxConfig(http_timeout_s=0.2, fetch_local=True))
    with pytest.raises(ToolError, match="timed out"):
        toolbox.call("fetch_url", {"url": server.url})


def test_fetch_url_refuses_binary_content(tmp_path, site):
    server = site(b"\x89PNG", ctype="image/png")
    with pytest.raises(ToolError, match="is image/png"):
        Toolbox(tmp_path, ToolboxConfig(fetch_local=True)).call(
            "fetch_url", {"url": server.url}
        )


def test_fetch_url_reports_http_errors(tmp_path, site):
    server = site(b"gone", ctype="text/plain", status=404)
    with pytest.raises(ToolError, match="HTTP 404"):
        Toolbox(tmp_path, ToolboxConfig(fetch_local=True)).call(
            "fetch_url", {"url": server.url}
        )


def test_html_to_text_keeps_blocks_on_their_own_lines():
    assert html_to_text("<ul><li>a</li><li>b  c</li></ul>") == "a\nb c"
