"""Web tools: ``search`` (DuckDuckGo HTML, or Serper with a key) and ``fetch_url``.

Both have a timeout and a size cap, and fail with a ToolError the model sees.
A failed search says "search unavailable — do not guess" so the model never
fills the gap with invented results.
"""

from __future__ import annotations

import html
import http.client
import json
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

from roles.tools import fetch_guard
from roles.tools.errors import ToolError

DDG_URL = "https://html.duckduckgo.com/html/"
SERPER_URL = "https://google.serper.dev/search"
MAX_RESULTS = 5
SEARCH_MAX_BYTES = 2_000_000
UNAVAILABLE = "search unavailable — do not guess"
USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Safari/605.1.15"
)

_ANCHOR = re.compile(
    r'<a[^>]*class="[^"]*result__a[^"]*"[^>]*href="([^"]+)"[^>]*>(.*?)</a>', re.DOTALL
)
_SNIPPET = re.compile(r'class="[^"]*result__snippet[^"]*"[^>]*>(.*?)</a>', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCKS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section"}
    | {"article", "header", "footer", "pre", "blockquote", "table", "ul", "ol"}
)


class _NoOddRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http and https URLs."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        """Refuse a redirect that leaves http/https."""
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.URLError(f"redirect to a non-http URL: {newurl}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_NoOddRedirects)
_PUBLIC_OPENER = fetch_guard.opener(_NoOddRedirects)


def search(
    query: str,
    *,
    timeout_s: float = 15,
    serper_api_key: str = "",
    ddg_url: str = DDG_URL,
    serper_url: str = SERPER_URL,
) -> str:
    """Return up to five results as ``title / snippet / url`` blocks."""
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty string")
    try:
        if serper_api_key:
            results = _serper(query, serper_url, serper_api_key, timeout_s)
        else:
            results = _duckduckgo(query, ddg_url, timeout_s)
    except (OSError, ValueError, http.client.HTTPException) as err:
        raise ToolError(f"{UNAVAILABLE} ({_describe(err)})") from None
    if not results:
        return f'No results found for: "{query}"'
    return "\n\n".join("\n".join(p for p in r if p) for r in results[:MAX_RESULTS])


def call(name: str, args: dict, config, *, local_ok: bool) -> str:
    """Run ``search`` or ``fetch_url`` with a ToolboxConfig's endpoints and limits."""
    if name == "search":
        return search(
            args["query"],
            timeout_s=config.http_timeout_s,
            serper_api_key=config.serper_api_key,
            ddg_url=config.search_url,
            serper_url=config.serper_url,
        )
    return fetch_url(
        args["url"],
        timeout_s=config.http_timeout_s,
        max_bytes=config.fetch_max_bytes,
        local_ok=local_ok,
    )


def fetch_url(
    url: str,
    *,
    timeout_s: float = 15,
    max_bytes: int = 2_000_000,
    local_ok: bool = False,
) -> str:
    """Return the text of an http(s) page, extracted from HTML when needed.

    Only public addresses are reached, on every redirect hop, unless ``local_ok``
    (the operator's ``ARTOO_SANDBOX_NETWORK=host``) lets this machine's services
    and its private network be fetched too.
    """
    if not isinstance(url, str) or not url.strip():
        raise ToolError("url must be a non-empty string")
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError(f"fetch_url takes http or https URLs only, got {url!r}")
    opener = _OPENER if local_ok else _PUBLIC_OPENER
    try:
        body, ctype, charset = _get(url.strip(), timeout_s, max_bytes, opener=opener)
    except fetch_guard.Refused as refused:
        hop = f" (redirected to {refused.url})" if refused.url != url.strip() else ""
        raise ToolError(f"fetch refused{hop}: {refused}") from None
    except (OSError, ValueError, http.client.HTTPException) as err:
        raise ToolError(f"fetch failed for {url}: {_describe(err)}") from None
    data, cut = body[:max_bytes], len(body) > max_bytes
    if not (
        ctype.startswith("text/") or "json" in ctype or "xml" in ctype or not ctype
    ):
        raise ToolError(f"fetch_url returns text; {url} is {ctype}")
    text = data.decode(charset or "utf-8", errors="replace")
    if "html" in ctype or (not ctype and "<html" in text[:2000].lower()):
        text = html_to_text(text)
    if cut:
        text += f"\n[page truncated at {max_bytes} bytes]"
    return text


def html_to_text(markup: str) -> str:
    """Return the visible text of an HTML document, one block per line."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in parser.text())
    return "\n".join(line for line in lines if line)


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BLOCKS:
            self._parts.append("\n")

    def handle_endtag(self, tag):
        if tag in _SKIPPED:
            self._skipping = max(self._skipping - 1, 0)
        elif tag in _BLOCKS:
            self._parts.append("\n")

    def handle_data(self, data):
        if not self._skipping:
            self._parts.append(data)

    def text(self) -> list[str]:
        return "".join(self._parts).split("\n")


def _get(url: str, timeout_s: float, max_bytes: int, opener=_OPENER, **kwargs) -> tuple:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs are fetched, not {url!r}")
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    # The scheme is checked just above, and redirects by _NoOddRedirects.
    request = urllib.request.Request(url, headers=headers, **kwargs)  # noqa: S310
    with opener.open(request, timeout=timeout_s) as response:
        body = response.read(max_bytes + 1)
        ctype = response.headers.get_content_type() if response.headers else ""
        if not response.headers.get("Content-Type"):
            ctype = ""
        return body, ctype, response.headers.get_content_charset()


def _duckduckgo(query: str, base: str, timeout_s: float) -> list[tuple[str, ...]]:
    url = f"{base}?{urllib.parse.urlencode({'q': query})}"
    body, _, charset = _get(url, timeout_s, SEARCH_MAX_BYTES)
    page = body.decode(charset or "utf-8", errors="replace")
    anchors = list(_ANCHOR.finditer(page))
    results = []
    for number, anchor in enumerate(anchors):
        href, title = anchor.groups()
        if "duckduckgo.com/y.js" in href:
            continue  # an advert
        # A snippet belongs to its result only: search up to the next anchor.
        end = anchors[number + 1].start() if number + 1 < len(anchors) else len(page)
        snippet = _SNIPPET.search(page, anchor.end(), end)
        text = snippet.group(1) if snippet else ""
        results.append((_clean(title), _clean(text), _target(href)))
    if not results and "result__a" not in page and "No results" not in page:
        raise ValueError("the search page held no results list (blocked or changed)")
    return results


def _serper(query: str, url: str, key: str, timeout_s: float) -> list[tuple]:
    payload = json.dumps({"q": query, "num": 10}).encode()
    headers = {"X-API-KEY": key, "Content-Type": "application/json"}
    body, _, _ = _get(url, timeout_s, SEARCH_MAX_BYTES, data=payload, headers=headers)
    organic = json.loads(body).get("organic") or []
    return [
        (str(o.get("title", "")), str(o.get("snippet", "")), str(o.get("link", "")))
        for o in organic
        if isinstance(o, dict)
    ]


def _clean(fragment: str) -> str:
    return html.unescape(_TAG.sub("", fragment)).strip()


def _target(href: str) -> str:
    href = html.unescape(href)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)
    if "uddg" in query:
        return query["uddg"][0]
    return "https:" + href if href.startswith("//") else href


def _describe(err: Exception) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    reason = getattr(err, "reason", None) or err
    text = str(reason)
    if "timed out" in text.lower():
        return f"network error: timed out ({text})"
    return f"network error: {text}"


WEB_TOOLS = ("search", "fetch_url")


def is_reachable(url: str = DDG_URL, timeout_s: float = 3.0) -> bool:
    """Return True when the web answers at all: the search host's name resolves.

    A machine without outside access gets no web tools, so a model cannot mistake
    ``search`` for grep or wait on a search that can only fail.
    """
    host = urllib.parse.urlsplit(url).hostname or ""
    done: dict[str, bool] = {}

    def resolve() -> None:
        try:
            socket.getaddrinfo(host, 443)
            done["ok"] = True
        except OSError:
            done["ok"] = False

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return done.get("ok", False)
