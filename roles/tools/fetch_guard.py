"""Public addresses only for ``fetch_url``: no service of this machine or its LAN.

A host is resolved once, every address it resolves to must be public, and the
connection goes to one of those vetted addresses, so a name that answers
differently a moment later (DNS rebinding) cannot redirect it. The Host header,
SNI and the certificate check still use the name from the URL. Each redirect hop
opens a new connection and is vetted the same way. Proxies from the environment
are not used: a proxy would resolve the name itself, past the check.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.request
from pathlib import Path

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# IPv6 prefixes that carry an IPv4 address in their last 32 bits.
_CARRIERS = (
    ipaddress.ip_network("64:ff9b::/96"),  # NAT64
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64
    ipaddress.ip_network("::/96"),  # the deprecated IPv4-compatible form
)
WHY = (
    "is an address of this machine or its private network; commands and fetches "
    "reach only public addresses unless the operator sets ARTOO_SANDBOX_NETWORK=host"
)


class Refused(Exception):
    """Raised when a fetch would reach an address that is not public."""

    url = ""


def is_public(ip: IPAddress) -> bool:
    """Return True when ``ip`` is globally routable and not this machine's own."""
    if not ip.is_global or ip.is_multicast:
        return False
    return all(is_public(inner) for inner in _embedded(ip)) and ip not in _own()


def vetted(host: str, port: int) -> list[tuple]:
    """Return the addrinfo tuples of ``host``; refuse unless every one is public."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    for info in infos:
        ip = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if not is_public(ip):
            named = host if _is_literal(host, ip) else f"{host} ({ip})"
            raise Refused(f"{named} {WHY}")
    return infos


def connect_vetted(host: str, port: int, timeout, source=None) -> socket.socket:
    """Return a socket connected to one of the vetted addresses of ``host``."""
    error: OSError | None = None
    for family, kind, proto, _, address in vetted(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source:
                sock.bind(source)
            sock.connect(address)
            return sock
        except OSError as err:
            sock.close()
            error = err
    raise error or OSError(f"{host} resolves to no address")


def opener(*handlers) -> urllib.request.OpenerDirector:
    """Return an opener that reaches public addresses only, with no proxy."""
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _HTTPHandler(), _HTTPSHandler(), *handlers
    )


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = connect_vetted(
            self.host, self.port, self.timeout, self.source_address
        )
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _HTTPSConnection(http.client.HTTPSConnection, _HTTPConnection):
    """Wrap the vetted socket in TLS for the URL's own host name.

    HTTPSConnection.connect calls super().connect(), which is the vetted one
    here, then verifies the certificate against ``self.host``: the name.
    """


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return _open(self, _HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return _open(self, _HTTPSConnection, req, context=self._context)


def _open(handler, connection, req, **kwargs):
    try:
        return handler.do_open(connection, req, **kwargs)
    except Refused as refused:
        # The innermost hop names the URL: after a redirect it is not the asked one.
        refused.url = refused.url or req.full_url
        raise


def _is_literal(host: str, ip: IPAddress) -> bool:
    try:
        return ipaddress.ip_address(host) == ip
    except ValueError:
        return False


def _embedded(ip: IPAddress) -> list[IPAddress]:
    if ip.version == 4:
        return []
    inner = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if any(ip in net for net in _CARRIERS):
        inner.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [i for i in inner if i is not None]


def _own() -> set[IPAddress]:
    """Return this machine's own addresses, a public one included (Linux)."""
    own: set[IPAddress] = set()
    # The routing trie lists each local address as "|-- ADDR" over "/32 host LOCAL".
    lines = _read("/proc/net/fib_trie").splitlines()
    for above, line in zip(lines, lines[1:], strict=False):
        if line.strip().startswith("/32 host LOCAL") and "|--" in above:
            own.add(ipaddress.IPv4Address(above.split("|--")[1].strip()))
    for line in _read("/proc/net/if_inet6").splitlines():
        if line.split():
            own.add(ipaddress.IPv6Address(int(line.split()[0], 16)))
    return own


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
