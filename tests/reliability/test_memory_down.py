"""The memory worker down: plans go ahead without memory; writes wait for it."""

from __future__ import annotations

import re

import pytest

from tests.reliability.harness import Api, Db, create_user, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]


def undelivered_megrams(db: Db) -> int:
    return db.value(
        "SELECT count(*) FROM artoo_web_busmessage "
        "WHERE type = 'Megram' AND delivered_at IS NULL"
    )


def test_runs_plan_without_memory_and_megrams_land_when_it_returns(start_cluster):
    cluster = start_cluster(processes=("web", "pipeline", "beat"))
    api = Api(cluster.url, create_user(cluster, "alice"))
    db = Db(cluster)
    run_ids = [api.submit("echo remembered # expect: remembered") for _ in range(3)]

    runs = api.wait_terminal(run_ids, 90)

    assert {r["status"] for r in runs.values()} == {"done"}
    for run_id in run_ids:
        assert "memory_unavailable" in db.trace_kinds(run_id)
        assert db.final_results(run_id) == 1
    queued = undelivered_megrams(db)
    assert queued >= len(run_ids), "GGS's Megrams should wait for the memory worker"

    cluster.start_process("memory")
    cluster.wait_ready(names=("memory",))

    wait_for(lambda: undelivered_megrams(db) == 0, 60, what="megrams delivered")
    wait_for(lambda: db.undelivered(run_ids) == 0, 60, what="all delivered")
    summary = cluster.manage("memory", "summary").stdout
    total = int(re.search(r"total=(\d+)", summary).group(1))
    assert total >= queued
    # The late MemoryRecalls find their rounds planned: nothing runs twice.
    assert all(db.final_results(run_id) == 1 for run_id in run_ids)
