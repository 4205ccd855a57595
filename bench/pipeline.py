"""Pipeline figures on a private cluster of real processes (offline model).

    python bench/pipeline.py [--runs 30] [--seconds 60] [--inflight 32] [--workers 1]

Prints: median submit → FinalResult of a one-subtask run at 0 ms model latency;
the wall-time ratio of 8 parallel subtasks to 1 at 1000 ms latency; sustained
runs/s over the given seconds, with the count of runs or messages lost.
``--workers N`` runs N pipeline worker processes (each ``-c 12`` threads, with
``ARTOO_SUBTASK_SLOTS`` 9 per worker); the database is SQLite in the data dir
unless ``DATABASE_URL`` names another.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from devtools import launcher  # noqa: E402
from devtools.cluster import Cluster  # noqa: E402

POLL_S = 0.005
# A machine busy with a model starts the cluster slowly; the figures say so.
READY_TIMEOUT_S = 600


def setup_django(env: dict) -> None:
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "artoo_web.settings"
    import django

    django.setup()


def wait_done(run_ids, timeout: float) -> dict:
    from artoo_web.models import TERMINAL_STATUSES, Run

    deadline, done = time.monotonic() + timeout, {}
    pending = set(run_ids)
    while pending and time.monotonic() < deadline:
        rows = Run.objects.filter(id__in=pending, status__in=TERMINAL_STATUSES)
        for run_id, finished in rows.values_list("id", "finished_at"):
            done[run_id] = finished
            pending.discard(run_id)
        time.sleep(POLL_S)
    return done


def submit_and_wait(user, text: str, timeout: float = 120) -> float:
    from artoo_web import runs

    started = time.monotonic()
    run = runs.submit(user, text)
    if not wait_done([run.id], timeout):
        raise RuntimeError(f"run {run.id} did not finish within {timeout} s")
    return time.monotonic() - started


def overhead(user, runs: int) -> None:
    load = report.Load()
    submit_and_wait(user, "echo warm")
    times = sorted(submit_and_wait(user, "echo hi") for _ in range(runs))
    median = statistics.median(times) * 1000
    p90 = times[int(len(times) * 0.9) - 1] * 1000
    print(
        f"one-subtask run, offline model at 0 ms: median {median:.0f} ms, "
        f"p90 {p90:.0f} ms over {runs} runs (target ≤ 50 ms median)"
    )
    report.figure("pipeline.one-subtask median", median, 50, "≤", "ms", load)


def parallel(user) -> None:
    load = report.Load()
    submit_and_wait(user, "echo warm")
    one = submit_and_wait(user, "echo a")
    eight = submit_and_wait(
        user, "\n".join(["echo a"] + [f"& echo {i}" for i in range(7)])
    )
    print(
        f"8 parallel subtasks vs 1 at 1000 ms latency: {eight:.2f} s vs {one:.2f} s, "
        f"ratio {eight / one:.2f} (target ≤ 1.25)"
    )
    report.figure("pipeline.8 parallel / 1", eight / one, 1.25, "≤", "×", load)


def drained(messages, timeout: float) -> dict[str, int]:
    """Wait for deliveries to finish; return what is still undelivered, by type."""
    from django.db.models import Count

    deadline = time.monotonic() + timeout
    while True:
        left = messages.filter(delivered_at__isnull=True)
        if not left.exists() or time.monotonic() > deadline:
            rows = left.values("type").annotate(n=Count("id"))
            return {r["type"]: r["n"] for r in rows}
        time.sleep(0.2)


def throughput(user, seconds: float, inflight: int) -> None:
    from django.utils import timezone

    from artoo_web import runs
    from artoo_web.models import BusMessage, Run

    load = report.Load()
    started, submitted, finished = time.monotonic(), [], {}
    window_start = timezone.now()
    while time.monotonic() - started < seconds:
        open_runs = [r for r in submitted if r not in finished]
        for _ in range(max(0, inflight - len(open_runs))):
            submitted.append(runs.submit(user, "echo load").id)
        finished.update(wait_done([r for r in submitted if r not in finished], 0.05))
    elapsed = time.monotonic() - started
    finished.update(wait_done([r for r in submitted if r not in finished], 120))
    lost_runs = len(submitted) - len(finished)
    undelivered = drained(BusMessage.objects.filter(run_id__in=submitted), 60)
    window_end = window_start + timedelta(seconds=elapsed)
    done_in_window = Run.objects.filter(
        id__in=submitted, finished_at__lte=window_end
    ).count()
    print(
        f"throughput: {done_in_window / elapsed:.1f} runs/s over {elapsed:.0f} s "
        f"({len(submitted)} submitted, {lost_runs} runs not finished, "
        f"undelivered after draining: {undelivered or 0}) "
        "(target ≥ 20 runs/s, nothing lost)"
    )
    rate = done_in_window / elapsed
    report.figure("pipeline.throughput", rate, 20, "≥", "runs/s", load)
    lost = lost_runs + sum(undelivered.values())
    report.figure("pipeline.lost (runs, messages)", lost, 0, "=", "", load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, choices=range(1, 9))
    opts = parser.parse_args()
    pipelines = tuple(
        "pipeline" if n == 1 else f"pipeline#{n}" for n in range(1, opts.workers + 1)
    )
    with tempfile.TemporaryDirectory(prefix="artoo-bench-") as tmp:
        data = Path(tmp)
        redis_proc, redis_url = launcher.start_embedded_redis(data)
        env = {
            "REDIS_URL": redis_url,
            "ARTOO_LOG_LEVEL": "WARNING",
            # One user makes the whole load: their per-user limits would refuse it.
            "ARTOO_USER_ACTIVE_RUNS": "0",
            "ARTOO_USER_RUNS_PER_MINUTE": "0",
            "ARTOO_SUBTASK_SLOTS": str(9 * opts.workers),
        }
        if os.environ.get("DATABASE_URL"):
            env["DATABASE_URL"] = os.environ["DATABASE_URL"]
        try:
            with Cluster(
                data,
                processes=(*pipelines, "memory"),
                env=env,
                ready_timeout=READY_TIMEOUT_S,
            ) as cluster:
                setup_django(cluster.env)
                from django.contrib.auth import get_user_model

                user = get_user_model().objects.create_user("bench")
                overhead(user, opts.runs)
                throughput(user, opts.seconds, opts.inflight)
            slow = {**env, "ARTOO_OFFLINE_LATENCY_MS": "1000"}
            with Cluster(
                data,
                processes=(*pipelines, "memory"),
                env=slow,
                ready_timeout=READY_TIMEOUT_S,
            ):
                parallel(user)
        finally:
            launcher.stop(redis_proc)


if __name__ == "__main__":
    main()
