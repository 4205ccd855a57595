"""Live dashboard stream figures: many websocket clients on a private cluster.

    python bench/live.py [--clients 100] [--messages 300] [--rate 20] [--quick]
                         [--timings]

Starts a private cluster (the web process only) and runs two scenarios: all
``--clients`` websocket clients on one run, then as many spread over 20 runs.
Each publishes ``--messages`` bus messages at ``--rate`` per second (over the
runs in turn) and kills and restarts the web process a third of the way
through, so every client reconnects with ``?after=<last id>``. Prints, each
next to its target: p50/p99 of commit and publish → receive before the kill
and after every client is live again, how long a client takes to catch up
once reopened, and the lost and duplicated counts; with the machine's load
average, since the box may be shared. ``--timings`` turns on the web
process's ARTOO_LIVE_TIMINGS and prints its Redis → client queue times.

The clients use the ``websockets`` library in this process; send and receive
times are both ``time.perf_counter`` of this process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report as bench_report  # noqa: E402
from devtools.cluster import Cluster  # noqa: E402

RECONNECT_S = 0.2
WARM_UP_S = 2.0
P50_TARGET_MS = 10.0
P99_TARGET_MS = 50.0
# A reopened dashboard is whole again within this (no target in the issue).
CATCH_UP_TARGET_MS = 1000.0
# Scenario → runs the clients are spread over.
SCENARIOS = {"one-run": 1, "spread": 20}


def setup_django(env: dict) -> None:
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "artoo_web.settings"
    import django

    django.setup()


def make_session() -> str:
    """Create the bench user and a logged-in session; return its cookie."""
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_user("bench", password="bench-pass-123")
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def make_runs(count: int) -> list[str]:
    from django.contrib.auth.models import User

    from artoo_web.models import Run

    user = User.objects.get(username="bench")
    return [
        str(Run.objects.create(owner=user, raw_input="bench", task_id="bench").id)
        for _ in range(count)
    ]


@dataclass(eq=False)
class Client:
    """One websocket client that reconnects from the last id it saw."""

    url: str
    headers: dict[str, str]
    received: dict[int, float] = field(default_factory=dict)
    duplicates: int = 0
    last: int = 0
    opened: list[float] = field(default_factory=list)
    live: asyncio.Event = field(default_factory=asyncio.Event)

    def on_frame(self, text: str, at: float) -> None:
        match = re.match(r'\{"kind": "message", "id": (\d+)', text)
        if match is None:
            return
        message_id = int(match.group(1))
        if message_id in self.received:
            self.duplicates += 1
            return
        self.received[message_id] = at
        self.last = max(self.last, message_id)

    async def run(self) -> None:
        while True:
            try:
                async with connect(
                    f"{self.url}?after={self.last}",
                    additional_headers=self.headers,
                    compression=None,
                    ping_interval=None,
                    max_size=None,
                    open_timeout=10,
                ) as socket:
                    self.opened.append(time.perf_counter())
                    self.live.set()
                    async for text in socket:
                        self.on_frame(text, time.perf_counter())
            except (OSError, InvalidHandshake, ConnectionClosed, TimeoutError):
                pass
            finally:
                self.live.clear()
            await asyncio.sleep(RECONNECT_S)


def publish(runs: list[str], count: int, rate: float, sent: dict, on_third) -> None:
    """Send ``count`` messages at ``rate``/s over the runs in turn."""
    from django.db import transaction

    from artoo_web import bus
    from artoo_web.models import Run

    objects = [Run.objects.get(id=run_id) for run_id in runs]
    payload = {"task_id": "bench", "next_moves": ["one", "two"]}
    for i in range(count):
        if i == count // 3:
            on_third()
        run = objects[i % len(objects)]
        with transaction.atomic():
            msg = bus.send(run, "R2", "User", "NextMoves", payload)
            started = time.perf_counter()
        sent[msg.id] = (started, str(run.id))
        time.sleep(1 / rate)


async def watch_outage(clients: list[Client], outage: dict) -> None:
    """Record when every client is live again after the web process was killed."""
    while "start" not in outage:
        await asyncio.sleep(0.01)
    while any(c.live.is_set() for c in clients):
        await asyncio.sleep(0.01)
    while not all(c.live.is_set() for c in clients):
        await asyncio.sleep(0.01)
    outage["end"] = time.perf_counter()


async def scenario(cluster: Cluster, args, runs: list[str], cookie: str) -> dict:
    base = f"ws://127.0.0.1:{cluster.port}/ws/runs/"
    headers = {"Cookie": cookie, "Origin": cluster.url}
    clients = {
        Client(f"{base}{runs[i % len(runs)]}/", headers): runs[i % len(runs)]
        for i in range(args.clients)
    }
    tasks = [asyncio.create_task(c.run()) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.live.wait() for c in clients)), 60)
    # Let the server finish the connects before timing anything.
    await asyncio.sleep(WARM_UP_S)
    outage: dict[str, float] = {}
    watcher = asyncio.create_task(watch_outage(list(clients), outage))

    def kill_web():
        cluster.kill("web")
        outage["start"] = time.perf_counter()
        time.sleep(1.0)
        cluster.start_process("web")

    sent: dict[int, tuple[float, str]] = {}
    load = os.getloadavg()
    await asyncio.to_thread(publish, runs, args.messages, args.rate, sent, kill_web)
    try:
        await asyncio.wait_for(watcher, 60)
    except TimeoutError:
        down = sum(1 for c in clients if not c.live.is_set())
        raise SystemExit(f"{down} clients did not reconnect within 60 s") from None
    await received_all(clients, sent)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return summarise(clients, sent, outage, (load, os.getloadavg()))


async def received_all(clients: dict[Client, str], sent: dict, wait_s=30) -> None:
    """Wait until every client has every message of its run (or ``wait_s``)."""
    expected: dict[str, set[int]] = {}
    for message_id, (_, run) in sent.items():
        expected.setdefault(run, set()).add(message_id)
    deadline = time.perf_counter() + wait_s
    while time.perf_counter() < deadline:
        if all(expected[run] <= c.received.keys() for c, run in clients.items()):
            return
        await asyncio.sleep(0.05)


def split(client: Client, mine: dict[int, float], outage: dict) -> dict:
    """Return one client's delays before and after the outage, and its catch-up."""
    got = client.received
    delays = {i: (got[i] - t0) * 1000 for i, t0 in mine.items() if i in got}
    reopened = min((t for t in client.opened if t > outage["start"]), default=None)
    missed = [
        got[i]
        for i, t0 in mine.items()
        if i in got and reopened and outage["start"] <= t0 < reopened
    ]
    return {
        "before": [d for i, d in delays.items() if mine[i] < outage["start"]],
        "after": [d for i, d in delays.items() if mine[i] > outage["end"]],
        "catch_up": [(max(missed) - reopened) * 1000] if missed else [],
        "lost": sum(1 for i in mine if i not in got),
        "duplicates": client.duplicates,
    }


def summarise(clients: dict[Client, str], sent: dict, outage: dict, load) -> dict:
    figures = {
        "clients": len(clients),
        "runs": len(set(clients.values())),
        "messages": len(sent),
        "outage_s": outage["end"] - outage["start"],
        "load": load,
        **{k: [] for k in ("before", "after", "catch_up")},
        "lost": 0,
        "duplicates": 0,
    }
    for client, run in clients.items():
        mine = {i: t0 for i, (t0, r) in sent.items() if r == run}
        for key, value in split(client, mine, outage).items():
            figures[key] += value
    return figures


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, figures: dict, timings: list[float]) -> None:
    """Print the scenario's figures, each next to its target (``bench/report.py``)."""
    (start, *_), _ = figures["load"]
    load = bench_report.Load(start)
    print(
        f"\n== {name}: {figures['clients']} clients on {figures['runs']} run(s), "
        f"{figures['messages']} messages; web killed and restarted, every client "
        f"live again after {figures['outage_s']:.2f} s"
    )
    for phase in ("before", "after"):
        values = figures[phase]
        if not values:
            print(f"  {phase} the reconnect: no deliveries")
            continue
        for label, value, target in (
            ("p50", statistics.median(values), P50_TARGET_MS),
            ("p99", percentile(values, 0.99), P99_TARGET_MS),
        ):
            figure = f"live.{name} {label} {phase} reconnect"
            bench_report.figure(figure, value, target, "≤", "ms", load)
    if figures["catch_up"]:
        values = figures["catch_up"]
        print(f"  catch-up once reopened: p50 {statistics.median(values):.0f} ms")
        figure = f"live.{name} catch-up max"
        bench_report.figure(figure, max(values), CATCH_UP_TARGET_MS, "≤", "ms", load)
    for key in ("lost", "duplicates"):
        bench_report.figure(f"live.{name} {key}", figures[key], 0, "=", "", load)
    if timings:
        print(
            f"  web process, Redis → every client's queue ({len(timings)} batches): "
            f"p50 {statistics.median(timings):.1f} ms, p99 "
            f"{percentile(timings, 0.99):.1f} ms"
        )


TIMING = re.compile(r"live: run \S+ ids .* in ([\d.]+) ms from Redis")


def web_timings(cluster: Cluster) -> list[float]:
    """Return the batch times the web process logged (ARTOO_LIVE_TIMINGS)."""
    text = cluster.log_text("web", whole=True)
    return [float(m.group(1)) for m in TIMING.finditer(text)]


def clear_log(cluster: Cluster) -> None:
    cluster.log_path("web").write_bytes(b"")


async def bench(cluster: Cluster, args, cookie: str) -> int:
    failed = 0
    for name, count in SCENARIOS.items():
        if args.only and args.only != name:
            continue
        runs = await asyncio.to_thread(make_runs, count)
        clear_log(cluster)
        figures = await scenario(cluster, args, runs, cookie)
        report(name, figures, web_timings(cluster) if args.timings else [])
        failed += figures["lost"] + figures["duplicates"]
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="90 messages a scenario")
    parser.add_argument("--timings", action="store_true")
    parser.add_argument("--only", choices=SCENARIOS, help="run one scenario")
    args = parser.parse_args()
    if args.quick:
        args.messages = min(args.messages, 90)
    if args.clients < 1 or args.messages < 3 or args.rate <= 0:
        parser.error("need --clients ≥ 1, --messages ≥ 3 and --rate > 0")
    env = {"ARTOO_LIVE_TIMINGS": "true"} if args.timings else {}
    with tempfile.TemporaryDirectory(prefix="artoo-bench-live-") as tmp:
        with Cluster(Path(tmp), processes=("web",), env=env) as cluster:
            names = ("ARTOO_DATA_DIR", "REDIS_URL", "SECRET_KEY", "DATABASE_URL")
            setup_django({k: cluster.env[k] for k in names if k in cluster.env})
            cookie = make_session()
            failed = asyncio.run(bench(cluster, args, cookie))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
