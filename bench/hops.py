"""Per-hop profile of a one-subtask offline run on a private cluster.

    python bench/hops.py [--runs 10] [--cprofile]

The workers run ``devtools.hopprobe``, which counts each task's own work; this
bench submits runs one after another and prints, for every hop of a run (a bus
message and the handler that takes it, or a follow-up task), the median over the
runs of: the wait from the task's enqueue to its start (broker and pickup; a
task enqueued with a countdown waits for it), wall and CPU ms in the handler,
SQL statements, database transactions, connections opened, Redis commands (and
round trips), Celery tasks enqueued and threads started; then the total per
run. Hops marked ``*`` start after the FinalResult was stored: off the user's
critical path. ``--cprofile`` adds the functions where the handlers' threads
spent their CPU time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.pipeline import setup_django, wait_done  # noqa: E402
from devtools import launcher  # noqa: E402
from devtools.cluster import Cluster  # noqa: E402

COLUMNS = (
    ("wait_ms", "wait ms", "{:.1f}"),
    ("wall_ms", "wall ms", "{:.1f}"),
    ("cpu_ms", "CPU ms", "{:.1f}"),
    ("queries", "SQL", "{:.0f}"),
    ("transactions", "tx", "{:.0f}"),
    ("connects", "conn", "{:.0f}"),
    ("redis_commands", "redis", "{:.0f}"),
    ("redis_round_trips", "(rt)", "{:.0f}"),
    ("n_enqueued", "tasks", "{:.0f}"),
    ("threads", "thr", "{:.0f}"),
)
SETTLE_TIMEOUT_S = 30


def short(task: str) -> str:
    return task.rsplit(".", 1)[-1]


def hop_name(record: dict, msg, handlers) -> str:
    """Name a hop: ``SubTask → R3 executor.run_subtask`` or ``start_run``."""
    if msg is None:
        return short(record["task"])
    reg = handlers.get((msg.recipient, msg.type))
    handler = reg.handler if reg else None
    where = (
        f"{handler.__module__.rsplit('.', 1)[-1]}.{handler.__name__}"
        if handler
        else "-"
    )
    return f"{msg.type} → {msg.recipient} {where}"


def read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def settle(run_id, timeout: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until every deliverable message of the run has been delivered."""
    from artoo_web.models import BusMessage

    deadline = time.monotonic() + timeout
    pending = BusMessage.objects.filter(run_id=run_id, delivered_at__isnull=True)
    while pending.exclude(recipient__in=("User", "R6")).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id}: messages left undelivered")
        time.sleep(0.05)
    time.sleep(0.3)  # the worker writes its record just after the handler returns


def profile_run(user, hops_file: Path, handlers) -> list[tuple[str, dict]]:
    """Submit one run; return its hops in start order as (name, figures)."""
    from artoo_web import runs
    from artoo_web.models import BusMessage, Run
    from devtools.hopprobe import Probe

    hops_file.write_text("")
    with Probe() as submitted:
        run = runs.submit(user, "echo hi")
    if not wait_done([run.id], 120):
        raise RuntimeError(f"run {run.id} did not finish")
    settle(run.id)
    run = Run.objects.get(id=run.id)
    messages = {m.id: m for m in BusMessage.objects.filter(run_id=run.id)}
    final_at = run.finished_at.timestamp()
    hops = [("submit (web)", {**vars(submitted), "wait_ms": 0.0, "after": False})]
    records = read_records(hops_file)
    sent = {r["sent"]: r["at"] for r in records if "sent" in r}
    done = [r for r in records if "task" in r]
    for rec in sorted(done, key=lambda r: r["started"]):
        first = rec["args"][0] if rec["args"] else None
        msg = messages.get(first) if short(rec["task"]) == "deliver" else None
        if msg is None and str(first) != str(run.id):
            continue  # another run's, or no run's (the Dreamer)
        born = sent.get(rec["id"], rec["started"])
        figures = {
            **rec,
            "wait_ms": max(0.0, (rec["started"] - born) * 1000),
            "after": rec["started"] > final_at,
        }
        hops.append((hop_name(rec, msg, handlers), figures))
    for _, figures in hops:
        figures["n_enqueued"] = len(figures["enqueued"])
    return hops


def table(profiles: list[list[tuple[str, dict]]]) -> tuple[list[str], dict]:
    """Return the median of each hop (by its name and ordinal) and of the totals."""
    per_hop: dict[str, list[dict]] = defaultdict(list)
    order: list[str] = []
    for hops in profiles:
        seen: dict[str, int] = defaultdict(int)
        for name, figures in hops:
            seen[name] += 1
            key = name if seen[name] == 1 else f"{name} #{seen[name]}"
            if key not in order:
                order.append(key)
            per_hop[key].append(figures)
    medians = {
        key: {
            col: statistics.median(f[col] for f in rows)
            for col, _, _ in COLUMNS
            if col != "wait_ms" or all("wait_ms" in f for f in rows)
        }
        | {"after": any(f["after"] for f in rows), "seen": len(rows)}
        for key, rows in per_hop.items()
    }
    totals = {
        col: statistics.median(sum(f[col] for _, f in hops) for hops in profiles)
        for col, _, _ in COLUMNS
        if col != "wait_ms"
    }
    return order, {"hops": medians, "total": totals}


def print_table(order: list[str], figures: dict, runs: int) -> None:
    width = max(len(k) for k in order) + 2
    head = "".join(f"{label:>8}" for _, label, _ in COLUMNS)
    print(f"{'hop (median over ' + str(runs) + ' runs)':<{width}}{head}")
    for key in order:
        row = figures["hops"][key]
        mark = "*" if row["after"] else " "
        cells = "".join(
            f"{fmt.format(row[col]):>8}" if col in row else f"{'':>8}"
            for col, _, fmt in COLUMNS
        )
        seen = "" if row["seen"] == runs else f"  (in {row['seen']} of {runs} runs)"
        print(f"{mark}{key:<{width - 1}}{cells}{seen}")
    total = figures["total"]
    cells = "".join(
        f"{fmt.format(total[col]):>8}" if col in total else f"{'':>8}"
        for col, _, fmt in COLUMNS
    )
    print(f"{'total per run':<{width}}{cells}")


def print_cprofile(data: Path, runs: int) -> None:
    """Print where the workers' task threads spent CPU time (own time first)."""
    import pstats

    files = [str(p) for p in data.glob("*.prof")]
    if not files:
        return
    stats = pstats.Stats(*files)
    print(f"CPU profile of the workers' tasks over {runs} runs (and the warm-up):")
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cprofile", action="store_true")
    opts = parser.parse_args()
    load = report.Load()
    with tempfile.TemporaryDirectory(prefix="artoo-hops-") as tmp:
        data = Path(tmp)
        hops_file = data / "hops.jsonl"
        redis_proc, redis_url = launcher.start_embedded_redis(data)
        env = {
            "REDIS_URL": redis_url,
            "ARTOO_LOG_LEVEL": "WARNING",
            "ARTOO_HOPS_FILE": str(hops_file),
            **({"ARTOO_HOPS_CPROFILE": str(data)} if opts.cprofile else {}),
            "ARTOO_USER_ACTIVE_RUNS": "0",
            "ARTOO_USER_RUNS_PER_MINUTE": "0",
        }
        try:
            cluster = Cluster(
                data,
                processes=("pipeline", "memory"),
                env=env,
                app="devtools.hopprobe",
                ready_timeout=600,
            )
            with cluster:
                setup_django(cluster.env)
                from django.contrib.auth import get_user_model

                from artoo_web.handlers import HANDLERS

                user = get_user_model().objects.create_user("bench")
                profile_run(user, hops_file, HANDLERS)  # warm the workers
                if opts.cprofile:
                    for prof in data.glob("*.prof"):
                        prof.unlink()
                profiles = [
                    profile_run(user, hops_file, HANDLERS) for _ in range(opts.runs)
                ]
                if opts.cprofile:
                    print_cprofile(data, opts.runs)
        finally:
            launcher.stop(redis_proc)
    order, figures = table(profiles)
    print_table(order, figures, opts.runs)
    total = figures["total"]
    cores = load.cores
    cpu_bound = cores * 1000 / total["cpu_ms"] if total["cpu_ms"] else 0
    print(
        f"handlers' CPU per run {total['cpu_ms']:.0f} ms: at most {cpu_bound:.0f} "
        f"runs/s on {cores} cores from the handlers' threads alone"
    )
    # 20 runs/s on this machine's cores leaves this much CPU per run.
    budget = cores * 1000 / 20
    report.figure(
        "hops.handlers' CPU per run", total["cpu_ms"], budget, "≤", "ms", load
    )
    report.figure("hops.handlers' wall per run", total["wall_ms"], 50, "≤", "ms", load)


if __name__ == "__main__":
    main()
