"""SQLite under 8 concurrent worker threads: nobody sees "database is locked"."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.reliability.harness import Api, Db, create_user, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

RUNS = 60
TASK = "echo one # expect: one\n& echo two # expect: two\n& echo three\necho four"


def test_many_concurrent_runs_never_surface_a_locked_database(start_cluster):
    cluster = start_cluster(
        processes=("web", "pipeline", "memory", "beat", "auditor"),
        # One user's burst of 60 runs: more than the per-user limits let in.
        env={"ARTOO_USER_ACTIVE_RUNS": "0", "ARTOO_USER_RUNS_PER_MINUTE": "0"},
        concurrency=8,
    )
    api = Api(cluster.url, create_user(cluster, "alice"))
    db = Db(cluster)

    with ThreadPoolExecutor(8) as pool:
        run_ids = list(pool.map(lambda _: api.submit(TASK), range(RUNS)))
    runs = api.wait_terminal(run_ids, 240)

    failed = {k: r["final_result"] for k, r in runs.items() if r["status"] != "done"}
    assert not failed, failed
    assert "locked" not in json.dumps([r["final_result"] for r in runs.values()])
    for name in ("web", "pipeline", "memory", "beat", "auditor"):
        log = cluster.log_text(name, whole=True)
        assert "database is locked" not in log, f"{name} log: locked"
        assert "Traceback" not in log, f"{name} log has a traceback"
    assert all(db.final_results(run_id) == 1 for run_id in run_ids)
    wait_for(lambda: db.undelivered(run_ids) == 0, 30, what="all delivered")
