"""Soak a private cluster: a steady rate of runs for minutes, through the JSON API.

    python bench/soak.py [--rate 10] [--minutes 1] [--latency-ms 0]

Starts web, pipeline, memory, beat and auditor (offline model), submits
``--rate`` one-subtask runs per second for ``--minutes``, then waits for every
run to end. Prints throughput, end-to-end latency (submit → FinalResult, p50 and
p99), the resident memory of each process at start and end (bound: growth at
most 50 MB or 20 %, whichever is larger) and the messages lost (must be 0).
Exits 1 when a run or a message is lost or a process outgrew the bound.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devtools.cluster import Cluster  # noqa: E402

PROCESSES = ("web", "pipeline", "memory", "beat", "auditor")
GROWTH_MB = 50
GROWTH_RATIO = 0.20
DRAIN_S = 120
TASK = "echo soak # expect: soak"


def rss_mb(proc) -> float:
    """Return the resident memory of a process and its children, in MB."""
    try:
        root = psutil.Process(proc.pid)
        procs = [root, *root.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 2**20
    except psutil.NoSuchProcess:
        return float("nan")


def snapshot(cluster: Cluster) -> dict[str, float]:
    found = {name: rss_mb(proc) for name, proc in cluster.procs.items()}
    if cluster.redis_proc is not None:
        found["redis"] = rss_mb(cluster.redis_proc)
    return found


def api_token(cluster: Cluster) -> str:
    code = (
        "from django.contrib.auth import get_user_model; "
        "get_user_model().objects.create_user('soak')"
    )
    cluster.manage("shell", "-c", code)
    return cluster.manage("create_api_token", "soak").stdout.strip()


def submitter(cluster: Cluster, token: str):
    def submit(_):
        req = urllib.request.Request(
            cluster.url + "/api/runs",
            data=json.dumps({"input": TASK}).encode(),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())["id"].replace("-", "")
        except Exception as exc:
            return exc

    return submit


def paced(rate: float, seconds: float, submit) -> tuple[list[str], list]:
    """Submit at ``rate`` per second for ``seconds``; return ids and errors."""
    ids, errors, lock = [], [], threading.Lock()

    def one(i):
        result = submit(i)
        with lock:
            (errors if isinstance(result, Exception) else ids).append(result)

    total = int(rate * seconds)
    start = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        for i in range(total):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(one, i)
    return ids, errors


def query(cluster: Cluster, sql: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{cluster.db_path}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def in_clause(ids: list[str]) -> str:
    return ",".join("?" * len(ids))


def drain(cluster: Cluster, ids: list[str]) -> int:
    """Wait for every run to end; return how many did not."""
    deadline = time.monotonic() + DRAIN_S
    while True:
        open_runs = query(
            cluster,
            "SELECT count(*) FROM artoo_web_run WHERE finished_at IS NULL "
            f"AND id IN ({in_clause(ids)})",
            ids,
        )[0][0]
        if open_runs == 0 or time.monotonic() > deadline:
            return open_runs
        time.sleep(0.5)


def undelivered(cluster: Cluster, ids: list[str]) -> int:
    """Return messages of these runs still undelivered after a short grace."""
    sql = (
        "SELECT count(*) FROM artoo_web_busmessage WHERE delivered_at IS NULL "
        f"AND run_id IN ({in_clause(ids)})"
    )
    deadline = time.monotonic() + 30
    while (count := query(cluster, sql, ids)[0][0]) and time.monotonic() < deadline:
        time.sleep(0.5)
    return count


def latencies(cluster: Cluster, ids: list[str]) -> tuple[list[float], float, float]:
    rows = query(
        cluster,
        "SELECT created_at, finished_at FROM artoo_web_run WHERE finished_at IS "
        f"NOT NULL AND id IN ({in_clause(ids)})",
        ids,
    )
    pairs = [(datetime.fromisoformat(a), datetime.fromisoformat(b)) for a, b in rows]
    spans = sorted((b - a).total_seconds() * 1000 for a, b in pairs)
    first = min(a for a, _ in pairs)
    last = max(b for _, b in pairs)
    return spans, first.timestamp(), last.timestamp()


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def report(cluster, ids, errors, lost_runs, lost_msgs, before, after, opts) -> bool:
    spans, first, last = latencies(cluster, ids)
    wall = max(last - first, 1e-9)
    print(
        f"submitted {len(ids)} runs at {opts.rate:g}/s for {opts.minutes:g} min "
        f"({len(errors)} submissions refused), model latency {opts.latency_ms} ms"
    )
    print(
        f"throughput: {len(spans) / wall:.1f} runs/s finished "
        f"({len(spans)} runs between first submit and last FinalResult, {wall:.1f} s)"
    )
    print(
        f"end-to-end submit → FinalResult: p50 {statistics.median(spans):.0f} ms, "
        f"p99 {percentile(spans, 0.99):.0f} ms, max {spans[-1]:.0f} ms"
    )
    ok = not errors and lost_runs == 0 and lost_msgs == 0
    print(
        f"memory (RSS, MB; bound: growth ≤ {GROWTH_MB} MB or ≤ "
        f"{GROWTH_RATIO:.0%}, whichever is larger):"
    )
    for name, start in before.items():
        end = after.get(name, float("nan"))
        bound = max(GROWTH_MB, start * GROWTH_RATIO)
        within = end - start <= bound
        ok = ok and within
        print(
            f"  {name:<9} {start:7.1f} → {end:7.1f}  ({end - start:+.1f})"
            f"{'' if within else '  OVER BOUND'}"
        )
    print(f"lost: {lost_runs} runs not finished, {lost_msgs} messages undelivered")
    print("OK" if ok else "FAIL")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=10.0, help="runs per second")
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--latency-ms", type=int, default=0, help="offline model")
    parser.add_argument("--concurrency", type=int, default=12)
    opts = parser.parse_args()
    if opts.rate <= 0 or opts.minutes <= 0 or opts.latency_ms < 0:
        parser.error("--rate and --minutes must be positive, --latency-ms ≥ 0")
    env = {
        "REDIS_URL": "",
        "ARTOO_LOG_LEVEL": "WARNING",
        "ARTOO_OFFLINE_LATENCY_MS": str(opts.latency_ms),
        # One user makes the whole load: their per-user limits would refuse it.
        "ARTOO_USER_ACTIVE_RUNS": "0",
        "ARTOO_USER_RUNS_PER_MINUTE": "0",
    }
    with tempfile.TemporaryDirectory(prefix="artoo-soak-") as tmp:
        with Cluster(
            Path(tmp), processes=PROCESSES, env=env, concurrency=opts.concurrency
        ) as cluster:
            submit = submitter(cluster, api_token(cluster))
            paced(opts.rate, min(5.0, opts.minutes * 60), submit)  # warm-up
            before = snapshot(cluster)
            ids, errors = paced(opts.rate, opts.minutes * 60, submit)
            lost_runs = drain(cluster, ids)
            lost_msgs = undelivered(cluster, ids)
            after = snapshot(cluster)
            ok = report(cluster, ids, errors, lost_runs, lost_msgs, before, after, opts)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
