"""Fair share on a private cluster of real processes (offline model).

    python bench/fairness.py [--long 10] [--seconds 25] [--slots 9] [--concurrency 12]

Prints how long user B's one-line run takes (submit → FinalResult) on an idle
pipeline, then while user A has ``--long`` runs of ``sleep --seconds`` active:
the difference is what A's load costs B (target ≤ 2 s). ``--slots 0
--concurrency 8`` gives the pipeline as it was before the fair share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from bench.pipeline import (  # noqa: E402
    READY_TIMEOUT_S,
    setup_django,
    submit_and_wait,
    wait_done,
)
from devtools import launcher  # noqa: E402
from devtools.cluster import Cluster  # noqa: E402

SHORT = "echo hi # expect: hi"


def executing(run_ids) -> int:
    from artoo_web.models import TraceEvent

    return TraceEvent.objects.filter(run_id__in=run_ids, kind="subtask_started").count()


def wait_executing(run_ids, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while executing(run_ids) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {count} of A's subtasks started")
        time.sleep(0.05)


def measure(opts) -> None:
    from django.contrib.auth import get_user_model

    from artoo_web import runs
    from artoo_web.models import Run

    load = report.Load()
    users = get_user_model().objects
    a, b = users.create_user("bench-a"), users.create_user("bench-b")
    submit_and_wait(b, "echo warm")
    idle = statistics.median(submit_and_wait(b, SHORT) for _ in range(3))
    long_runs = [runs.submit(a, f"sleep {opts.seconds}").id for _ in range(opts.long)]
    share = opts.slots - 1 if opts.slots else opts.concurrency
    wait_executing(long_runs, min(opts.long, share))
    loaded = submit_and_wait(b, SHORT, timeout=opts.seconds * 4)
    still = Run.objects.filter(id__in=long_runs, finished_at__isnull=True).count()
    print(
        f"B's one-line run, submit → FinalResult: {idle:.2f} s idle (median of 3), "
        f"{loaded:.2f} s with A's {opts.long} × sleep {opts.seconds} active "
        f"({loaded - idle:+.2f} s; target ≤ 2 s); {still} of A's runs still "
        f"active when B's ended (slots {opts.slots}, {opts.concurrency} threads)"
    )
    report.figure("fairness.B's added wait", loaded - idle, 2, "≤", "s", load)
    for run in Run.objects.filter(id__in=long_runs, finished_at__isnull=True):
        runs.cancel(run)
    wait_done(long_runs, 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=25)
    parser.add_argument("--slots", type=int, default=9)
    parser.add_argument("--concurrency", type=int, default=12)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="artoo-bench-") as tmp:
        data = Path(tmp)
        redis_proc, redis_url = launcher.start_embedded_redis(data)
        env = {
            "REDIS_URL": redis_url,
            "ARTOO_LOG_LEVEL": "WARNING",
            "ARTOO_SUBTASK_SLOTS": str(opts.slots),
        }
        try:
            with Cluster(
                data,
                processes=("pipeline", "memory"),
                env=env,
                concurrency=opts.concurrency,
                ready_timeout=READY_TIMEOUT_S,
            ) as cluster:
                setup_django(cluster.env)
                measure(opts)
        finally:
            launcher.stop(redis_proc)


if __name__ == "__main__":
    main()
