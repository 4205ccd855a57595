"""Drive a Cluster from outside: JSON API, web pages, websocket, read-only DB.

Everything here talks to the cluster the way a user or an operator would (HTTP,
a websocket, ``manage.py``) or reads its SQLite file read-only; nothing imports
the cluster's Django. The HTTP client, the API and the database reader live in
``devtools.apiclient`` (the benches use them too) and are re-exported here.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import socket
import struct

from devtools.apiclient import (  # noqa: F401 (re-exported for the suite)
    PASSWORD,
    TERMINAL,
    Api,
    Db,
    Http,
    Reply,
    create_user,
    csrf_token,
    seed_shared,
    wait_for,
)
from devtools.cluster import Cluster
from tests.llm_server import Step, ToolCallSpec


class WsClosed(Exception):
    def __init__(self, code: int | None):
        super().__init__(f"websocket closed with code {code}")
        self.code = code


class WsClient:
    """A minimal RFC 6455 client (text frames, ping/pong, close) over a socket."""

    def __init__(self, host: str, port: int, path: str, headers: dict | None = None):
        self.sock = socket.create_connection((host, port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        head = self._read_until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])
        if self.status != 101:
            self.sock.close()
            raise WsClosed(None)

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WsClosed(None)
            self.buf += chunk
        head, _, self.buf = self.buf.partition(marker)
        return head

    def _read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WsClosed(None)
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def receive(self, timeout: float) -> str:
        """Return the next text message; raise WsClosed or TimeoutError."""
        self.sock.settimeout(timeout)
        message = b""
        while True:
            try:
                b0, b1 = self._read_exact(2)
            except TimeoutError:
                raise
            except OSError:
                raise WsClosed(None) from None
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read_exact(8))[0]
            payload = self._read_exact(n)
            if opcode == 0x8:
                code = (
                    struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                )
                self.close()
                raise WsClosed(code)
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x1, 0x0):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self) -> None:
        try:
            self._send_frame(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()


def ws_connect(cluster: Cluster, path: str, cookie: str = "") -> WsClient:
    headers = {"Origin": cluster.url}
    if cookie:
        headers["Cookie"] = cookie
    return WsClient("127.0.0.1", cluster.port, path, headers)


def pgrep(marker: str) -> list[int]:
    """Return the pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def start_redis(data_dir, port: int | None = None):
    """Start the virtualenv's redis-server (on ``port``, else a free one).

    Return the process and its URL; the server keeps its dump under
    ``data_dir/redis``, so a restart on the same port finds what it saved (and
    a restart with another ``data_dir`` finds nothing, as after a crash that
    persisted nothing).
    """
    import subprocess

    from devtools import launcher

    if port is None:
        return launcher.start_embedded_redis(data_dir)
    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            str(launcher.VENV_BIN / "redis-server"),
            *("--port", str(port), "--bind", "127.0.0.1", "--dir", str(redis_dir)),
            *("--save", "60 1", "--appendonly", "no"),
            *("--logfile", str(redis_dir / "redis.log")),
        ],
        start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: launcher.redis_answers(url), 10, 0.05, what="redis restarted")
    return proc, url


def crash_redis(proc, url: str) -> None:
    """Kill Redis (SIGKILL) so that its pub/sub clients hear of it first.

    When Redis dies the kernel closes its sockets one by one; a worker may learn
    of it on a pub/sub connection (remote control, gossip) while its BRPOP is
    still pending, or on the BRPOP itself. Dropping the pub/sub clients a moment
    before the kill makes the first order, the one kombu mishandles, certain.
    """
    import signal

    import redis

    redis.Redis.from_url(url).client_kill_filter(_type="pubsub")
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


SPEC = {
    "task_id": "scripted",
    "intent": "scripted",
    "constraints": {},
    "raw_input": "x",
}
PLAN = {
    "task_criteria": [],
    "subtasks": [{"intent": "step", "success_criteria": ["it works"], "sequence": 1}],
}
MATCHED = {
    "verdict": "matched",
    "criteria_results": [{"criterion": "it works", "met": True, "evidence": "ok"}],
}
ACCEPT = {"verdict": "accept", "summary": "done", "merged_output": "done"}


COMMANDS = itertools.count(1)


def look_then_complete(request):
    """R3 that runs one shell command (its evidence), then reports completion."""
    if not any(m.get("role") == "tool" for m in request.messages):
        command = f"echo done $(({next(COMMANDS)}))"  # computed, not an echo
        return Step(tool_calls=(ToolCallSpec("shell", {"command": command}),))
    return json.dumps({"status": "completed", "output": "done"})


def script_roles(llm, execute=None) -> None:
    """Script every role for a one-subtask run that succeeds (R3 by ``execute``)."""
    llm.default_reply(json.dumps(SPEC), role="R1")
    llm.default_reply(json.dumps(PLAN), role="R2")
    llm.responder(execute or look_then_complete, role="R3")
    llm.default_reply(json.dumps(MATCHED), role="R4a")
    llm.default_reply(json.dumps(ACCEPT), role="R4b")
