"""Two pipeline workers with their own node names share one run's subtasks."""

from __future__ import annotations

import socket

import pytest

from tests.reliability.harness import Api, Db, create_user

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(180)]

PARALLEL = 8
TASK = "\n".join(["sleep 1"] + ["& sleep 1"] * (PARALLEL - 1))


def test_a_runs_parallel_subtasks_are_executed_by_both_workers(start_cluster):
    cluster = start_cluster(concurrency=2)
    cluster.start_process("pipeline#2", node="pipeline2@%h")
    cluster.wait_ready(names=("pipeline#2",))
    api = Api(cluster.url, create_user(cluster, "alice"))

    run_id = api.submit(TASK)
    run = api.wait_terminal([run_id], 90)[run_id]

    assert run["status"] == "done"
    workers = Db(cluster).rows(
        "SELECT json_extract(data, '$.worker') FROM artoo_web_traceevent "
        "WHERE run_id = ? AND kind = 'subtask_started'",
        (run_id.replace("-", ""),),
    )
    host = socket.gethostname()
    assert len(workers) >= PARALLEL
    assert {w for (w,) in workers} == {f"pipeline@{host}", f"pipeline2@{host}"}
