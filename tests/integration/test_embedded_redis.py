"""The Redis that `make run` starts answers only those who hold its password."""

from __future__ import annotations

import socket
import stat
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from devtools import launcher


@pytest.fixture
def embedded(tmp_path, capsys):
    proc, url = launcher.start_embedded_redis(tmp_path)
    try:
        yield url, capsys.readouterr().out, proc
    finally:
        launcher.stop(proc)


def raw_command(url: str, line: bytes) -> bytes:
    """Send one inline command to the server of ``url`` with no AUTH first."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(line + b"\r\n")
        return sock.recv(200)


def test_the_embedded_redis_refuses_an_unauthenticated_ping(embedded):
    url, _, _ = embedded

    assert raw_command(url, b"PING").startswith(b"-NOAUTH")
    assert launcher.redis_answers(url)


def test_its_url_carries_the_password_kept_beside_the_key(tmp_path, embedded):
    url, _, _ = embedded
    password = urlsplit(url).password
    kept = tmp_path / "redis_password"

    assert password and password == kept.read_text().strip()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert raw_command(url, b"AUTH " + password.encode()).startswith(b"+OK")
    assert launcher.redis_password(tmp_path) == password


def test_the_password_is_never_printed(embedded):
    url, printed, _ = embedded

    assert "started embedded Redis at redis://:***@127.0.0.1:" in printed
    assert urlsplit(url).password not in printed


def test_nor_is_it_on_the_servers_command_line(tmp_path, embedded):
    url, _, proc = embedded
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()

    assert b"redis" in cmdline
    assert urlsplit(url).password.encode() not in cmdline
    config = tmp_path / "redis" / "redis.conf"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_a_password_in_a_url_is_redacted():
    assert launcher.redact("redis://:s3cret@127.0.0.1:6379/0") == (
        "redis://:***@127.0.0.1:6379/0"
    )
    assert launcher.redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
