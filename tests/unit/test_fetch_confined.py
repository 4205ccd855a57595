"""fetch_url reaches public addresses only, unless the operator opts in.

Real sockets on this machine's loopback. Whether a connection was attempted is
observed twice: the listener's accept queue, and the interpreter's own
``socket.connect`` audit event. Tests that need a first hop to be allowed (a
redirect, a rebinding name) allow exactly 127.0.0.2 by wrapping the address
classifier ``fetch_guard.is_public``; every other address keeps the real rule.
Names that must resolve somewhere are given by patching ``socket.getaddrinfo``
for that one name only (DNS is the outside network edge).
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig, ToolError, fetch_guard
from roles.tools.sandbox import Sandbox, SandboxPolicy

ROOT = Path(__file__).resolve().parents[2]
WHY = "is an address of this machine or its private network"
_watched: list | None = None


def _audit(event, args):
    if event == "socket.connect" and _watched is not None:
        _watched.append(args[1])


sys.addaudithook(_audit)


@pytest.fixture
def connects():
    """Yield the addresses every socket.connect of the test was asked for."""
    global _watched
    _watched = []
    yield _watched
    _watched = None


class Listener:
    """A bare listening socket: it only tells whether anyone connected."""

    def __init__(self, family=socket.AF_INET, host="127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def was_contacted(self) -> bool:
        # A loopback connect completes its handshake before connect() returns,
        # so a connection made during the test is already in the accept queue.
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True

    def close(self):
        self.sock.close()


class Site:
    """An HTTP server on ``host`` answering a page, or a redirect to ``location``."""

    def __init__(self, host="127.0.0.1", body=b"the page", location=""):
        self.requests: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.requests.append(self.path)
                self.send_response(302 if location else 200)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def started():
    """Start Listeners and Sites, closed at the end of the test."""
    things = []

    def start(kind, *args, **kwargs):
        things.append(kind(*args, **kwargs))
        return things[-1]

    yield start
    for thing in things:
        thing.close()


@pytest.fixture
def allow_127_0_0_2(monkeypatch):
    """Let 127.0.0.2, and only it, pass as a public address."""
    real = fetch_guard.is_public
    monkeypatch.setattr(
        fetch_guard, "is_public", lambda ip: str(ip) == "127.0.0.2" or real(ip)
    )


def resolve(monkeypatch, name: str, *answers: str) -> list[str]:
    """Make ``name`` resolve to each answer in turn (the last one after that)."""
    real, asked = socket.getaddrinfo, []

    def getaddrinfo(host, port, *args, **kwargs):
        if host != name:
            return real(host, port, *args, **kwargs)
        asked.append(host)
        answer = answers[min(len(asked), len(answers)) - 1]
        return real(answer, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def fetch(tmp_path, url: str, **settings) -> str:
    config = ToolboxConfig(http_timeout_s=2, **settings)
    return Toolbox(tmp_path, config).call("fetch_url", {"url": url})


def test_a_loopback_server_is_not_contacted_and_the_refusal_says_why(
    tmp_path, started, connects
):
    listener = started(Listener)
    url = f"http://127.0.0.1:{listener.port}/"
    with pytest.raises(ToolError) as err:
        fetch(tmp_path, url)
    assert str(err.value) == (
        f"fetch refused: 127.0.0.1 {WHY}; commands and fetches reach only public "
        "addresses unless the operator sets ARTOO_SANDBOX_NETWORK=host"
    )
    assert not listener.was_contacted()
    assert connects == []


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "127.1",
        "2130706433",
        "[::1]",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "[::]",
        "169.254.169.254",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "[fd00::2]",
        "[fe80::1]",
        "224.0.0.1",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
    ],
)
def test_a_local_or_private_address_is_refused_without_a_connection_attempt(
    tmp_path, started, connects, host
):
    v4, v6 = started(Listener), started(Listener, socket.AF_INET6, "::1")
    for port in (v4.port, v6.port):
        with pytest.raises(ToolError, match=f"^fetch refused: .*{WHY}"):
            fetch(tmp_path, f"http://{host}:{port}/latest/meta-data/")
    assert connects == []
    assert not v4.was_contacted() and not v6.was_contacted()


def test_a_public_name_that_resolves_to_loopback_is_refused(
    tmp_path, started, connects, monkeypatch
):
    listener = started(Listener)
    resolve(monkeypatch, "files.example.com", "127.0.0.1")
    with pytest.raises(ToolError, match=rf"files\.example\.com \(127\.0\.0\.1\) {WHY}"):
        fetch(tmp_path, f"http://files.example.com:{listener.port}/")
    assert connects == [] and not listener.was_contacted()


@pytest.mark.parametrize("target", ["127.0.0.1", "localhost"])
def test_a_redirect_from_an_allowed_site_to_loopback_is_refused(
    tmp_path, started, connects, allow_127_0_0_2, target
):
    inner = started(Listener)
    secret = f"http://{target}:{inner.port}/secret"
    outer = started(Site, "127.0.0.2", location=secret)
    with pytest.raises(ToolError) as err:
        fetch(tmp_path, f"http://127.0.0.2:{outer.port}/start")
    assert str(err.value).startswith(f"fetch refused (redirected to {secret}): ")
    assert WHY in str(err.value)
    assert outer.requests == ["/start"]
    assert not inner.was_contacted()
    assert connects == [("127.0.0.2", outer.port)]


def test_the_connection_goes_to_the_vetted_address_not_a_second_answer(
    tmp_path, started, connects, monkeypatch, allow_127_0_0_2
):
    inner = started(Listener)
    site = started(Site, "127.0.0.2", body=b"vetted")
    # A rebinding name: public (here 127.0.0.2) when checked, loopback after.
    resolve(monkeypatch, "rebind.example.com", "127.0.0.2", "127.0.0.1")
    port = site.port
    inner_port = inner.port
    assert fetch(tmp_path, f"http://rebind.example.com:{port}/") == "vetted"
    assert site.requests == ["/"]
    assert connects == [("127.0.0.2", port)]
    assert not inner.was_contacted() and inner_port != port


def test_the_operator_opt_in_reaches_the_loopback_site_and_its_redirect(
    tmp_path, started
):
    site = started(Site, body=b"local page")
    hop = started(Site, location=f"http://localhost:{site.port}/there")
    url = f"http://127.0.0.1:{hop.port}/here"
    assert fetch(tmp_path, url, fetch_local=True) == "local page"
    assert hop.requests == ["/here"] and site.requests == ["/there"]


def test_a_sandbox_on_the_host_network_opts_fetch_in_too(tmp_path, started):
    site = started(Site, body=b"local page")
    url = {"url": f"http://127.0.0.1:{site.port}/"}
    for network in ("none", "egress", "host"):
        policy = SandboxPolicy(state_dir=tmp_path / "state", network=network)
        sandbox = Sandbox(policy, run_key=network, workspace=tmp_path)
        toolbox = Toolbox(tmp_path, sandbox=sandbox)
        if network == "host":
            assert toolbox.call("fetch_url", url) == "local page"
        else:
            with pytest.raises(ToolError, match=f"^fetch refused: 127.0.0.1 {WHY}"):
                toolbox.call("fetch_url", url)
    assert site.requests == ["/"]


def test_a_public_address_of_this_machine_itself_is_refused(tmp_path):
    # In a network namespace of its own, 8.8.8.8 is put on the loopback device:
    # a public address that is this machine's own.
    script = textwrap.dedent(
        """
        import socket, subprocess, sys
        from pathlib import Path
        from roles.tools import Toolbox, ToolError
        for args in (["link", "set", "lo", "up"], ["addr", "add", "8.8.8.8/32",
                     "dev", "lo"]):
            subprocess.run(["ip", *args], check=True)
        sock = socket.create_server(("8.8.8.8", 0))
        sock.setblocking(False)
        url = f"http://8.8.8.8:{sock.getsockname()[1]}/"
        try:
            Toolbox(Path(sys.argv[1])).call("fetch_url", {"url": url})
        except ToolError as err:
            print(err)
        try:
            sock.accept()
            print("contacted")
        except BlockingIOError:
            print("not contacted")
        """
    )
    command = ["unshare", "-n", "--", sys.executable, "-c", script, str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if "unshare failed" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip(f"no network namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"fetch refused: 8.8.8.8 {WHY}")
    assert lines[1] == "not contacted"


def test_https_goes_to_the_vetted_address_with_the_name_for_sni_and_certificate(
    tmp_path, started, connects, monkeypatch, allow_127_0_0_2
):
    name = "secure.example.com"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}"]
        + ["-addext", f"subjectAltName=DNS:{name}"],
        check=True,
        capture_output=True,
    )
    site = started(Site, "127.0.0.2", body=b"over tls")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    names = []
    served.sni_callback = lambda sock, server_name, ctx: names.append(server_name)
    site.httpd.socket = served.wrap_socket(site.httpd.socket, server_side=True)
    resolve(monkeypatch, name, "127.0.0.2", "127.0.0.1")
    trusting = ssl.create_default_context(cafile=str(cert))
    for host, refused in ((name, False), ("127.0.0.2", True)):
        conn = fetch_guard._HTTPSConnection(
            host, site.port, timeout=2, context=trusting
        )
        if refused:  # the certificate names the host, not its address
            with pytest.raises(ssl.SSLCertVerificationError):
                conn.request("GET", "/tls")
        else:
            conn.request("GET", "/tls")
            assert conn.getresponse().read() == b"over tls"
        conn.close()
    assert names == [name, None]
    assert site.requests == ["/tls"]
    assert connects == [("127.0.0.2", site.port)] * 2
