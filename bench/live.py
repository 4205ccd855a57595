"""Live dashboard stream figures: many websocket clients on one run of a cluster.

    python bench/live.py [--clients 100] [--messages 300] [--rate 20]

Starts a private cluster (the web process only), opens ``--clients`` websocket
clients on one run, publishes ``--messages`` bus messages at ``--rate`` per
second, and kills and restarts the web process a third of the way through so
every client reconnects with ``?after=<last id>``. Prints p50/p99 of commit and
publish → receive latency for messages published while the clients were live,
the catch-up delay of those published during the outage, and the count of lost
and duplicated messages (lost must be 0). The websocket client is a minimal
RFC 6455 reader on asyncio streams: autobahn's asyncio client cannot share a
process with daphne's Twisted one, and no other client library is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devtools.cluster import Cluster  # noqa: E402

RECONNECT_S = 0.2
WARM_UP_S = 2.0


def setup_django(env: dict) -> None:
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "artoo_web.settings"
    import django

    django.setup()


def make_run_and_session() -> tuple[str, str]:
    """Create a user, a run and a logged-in session; return (run id, cookie)."""
    from django.contrib.auth.models import User
    from django.test import Client

    from artoo_web.models import Run

    user = User.objects.create_user("bench", password="bench-pass-123")
    run = Run.objects.create(owner=user, raw_input="bench", task_id="bench")
    client = Client()
    client.force_login(user)
    return str(run.id), f"sessionid={client.cookies['sessionid'].value}"


async def open_socket(port: int, path: str, headers: dict[str, str]):
    """Open a websocket (RFC 6455 handshake); return the stream pair."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        writer.close()
        raise ConnectionError(head.split(b"\r\n", 1)[0].decode())
    return reader, writer


async def read_message(reader, writer) -> bytes | None:
    """Return the next text message (joining fragments); None when closed."""
    parts: list[bytes] = []
    while True:
        first, second = await reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await reader.readexactly(8))
        payload = await reader.readexactly(length)
        opcode = first & 0x0F
        if opcode == 0x8:
            return None
        if opcode == 0x9:  # ping: answer with a masked pong
            mask = os.urandom(4)
            body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            writer.write(bytes([0x8A, 0x80 | len(body)]) + mask + body)
            continue
        if opcode in (0x0, 0x1, 0x2):
            parts.append(payload)
            if first & 0x80:
                return b"".join(parts)


class Client:
    """One websocket client that reconnects from the last id it saw."""

    def __init__(self, port: int, path: str, cookie: str):
        self.port, self.path = port, path
        self.headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
        self.received: dict[int, float] = {}
        self.duplicates = 0
        self.last = 0
        self.live = asyncio.Event()

    def on_frame(self, data: dict) -> None:
        if data.get("kind") != "message":
            return
        if data["id"] in self.received:
            self.duplicates += 1
            return
        self.received[data["id"]] = time.perf_counter()
        self.last = max(self.last, data["id"])

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            path = f"{self.path}?after={self.last}"
            try:
                reader, writer = await open_socket(self.port, path, self.headers)
            except (OSError, ConnectionError, asyncio.IncompleteReadError):
                await asyncio.sleep(RECONNECT_S)
                continue
            self.live.set()
            try:
                while (message := await read_message(reader, writer)) is not None:
                    self.on_frame(json.loads(message))
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                self.live.clear()
                writer.close()
            await asyncio.sleep(RECONNECT_S)


def publish(run_id: str, count: int, rate: float, sent: dict, on_third) -> None:
    """Send ``count`` messages at ``rate``/s; remember each commit time."""
    from django.db import transaction

    from artoo_web import bus
    from artoo_web.models import Run

    run = Run.objects.get(id=run_id)
    payload = {"task_id": "bench", "next_moves": ["one", "two"]}
    for i in range(count):
        if i == count // 3:
            on_third()
        with transaction.atomic():
            msg = bus.send(run, "R2", "User", "NextMoves", payload)
            started = time.perf_counter()
        sent[msg.id] = started
        time.sleep(1 / rate)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def watch_outage(clients: list[Client], outage: dict) -> None:
    """Record when every client is live again after the web process was killed."""
    while "start" not in outage:
        await asyncio.sleep(0.01)
    while any(c.live.is_set() for c in clients):
        await asyncio.sleep(0.01)
    while not all(c.live.is_set() for c in clients):
        await asyncio.sleep(0.01)
    outage["end"] = time.perf_counter()


async def bench(cluster: Cluster, args, run_id: str, cookie: str) -> dict:
    path = f"/ws/runs/{run_id}/"
    clients = [Client(cluster.port, path, cookie) for _ in range(args.clients)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(c.run(stop)) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.live.wait() for c in clients)), 60)
    # Let the server finish the hundred connects before timing anything.
    await asyncio.sleep(WARM_UP_S)
    outage: dict[str, float] = {}
    watcher = asyncio.create_task(watch_outage(clients, outage))

    def kill_web():
        cluster.kill("web")
        outage["start"] = time.perf_counter()
        time.sleep(1.0)
        cluster.start_process("web")

    sent: dict[int, float] = {}
    await asyncio.to_thread(publish, run_id, args.messages, args.rate, sent, kill_web)
    await asyncio.wait_for(watcher, 60)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while loop.time() < deadline and any(len(c.received) < len(sent) for c in clients):
        await asyncio.sleep(0.05)
    stop.set()
    for task in tasks:
        task.cancel()
    return summarise(clients, sent, outage)


def summarise(clients: list[Client], sent: dict[int, float], outage: dict) -> dict:
    before, catch_up, after = [], [], []
    lost = duplicates = 0
    for c in clients:
        lost += sum(1 for i in sent if i not in c.received)
        duplicates += c.duplicates
        for i, t0 in sent.items():
            if i in c.received:
                delay = (c.received[i] - t0) * 1000
                if t0 < outage["start"]:
                    before.append(delay)
                elif t0 <= outage["end"]:
                    catch_up.append(delay)
                else:
                    after.append(delay)
    return {
        "clients": len(clients),
        "messages": len(sent),
        "live": before + after,
        "before": before,
        "after": after,
        "catch_up": catch_up,
        "outage_s": outage["end"] - outage["start"],
        "lost": lost,
        "duplicates": duplicates,
    }


def report(figures: dict) -> None:
    live, catch_up = figures["live"], figures["catch_up"]
    print(f"clients: {figures['clients']}, messages: {figures['messages']}")
    for name, values in (
        ("live, all", live),
        ("live, before the restart", figures["before"]),
        ("live, after the reconnect", figures["after"]),
    ):
        if values:
            print(
                f"commit+publish → receive ({name}): p50 "
                f"{statistics.median(values):.1f} ms, p99 "
                f"{percentile(values, 0.99):.1f} ms over {len(values)} deliveries"
            )
    print(
        f"web killed and restarted: every client live again after "
        f"{figures['outage_s']:.2f} s"
    )
    if catch_up:
        print(
            f"published during the outage, caught up on reconnect: max "
            f"{max(catch_up):.0f} ms over {len(catch_up)} deliveries"
        )
    print(f"lost: {figures['lost']}  duplicated: {figures['duplicates']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20.0)
    args = parser.parse_args()
    if args.clients < 1 or args.messages < 3 or args.rate <= 0:
        parser.error("need --clients ≥ 1, --messages ≥ 3 and --rate > 0")
    with tempfile.TemporaryDirectory(prefix="artoo-bench-live-") as tmp:
        with Cluster(Path(tmp), processes=("web",)) as cluster:
            names = ("ARTOO_DATA_DIR", "REDIS_URL", "SECRET_KEY", "DATABASE_URL")
            setup_django({k: cluster.env[k] for k in names if k in cluster.env})
            run_id, cookie = make_run_and_session()
            figures = asyncio.run(bench(cluster, args, run_id, cookie))
    report(figures)
    return 1 if figures["lost"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
