"""A pipeline worker killed mid-run: every run still ends, once, nothing lost."""

from __future__ import annotations

import json
import signal

import pytest

from tests.llm_server import ScriptedLLMServer
from tests.reliability.harness import PLAN, Api, Db, create_user, script_roles, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]

TASK = "sleep 2\n& sleep 2\necho after-the-crash # expect: after-the-crash"
RUNS = 6


def test_killed_pipeline_worker_loses_no_run_and_duplicates_no_result(
    start_cluster,
):
    cluster = start_cluster(
        env={
            "ARTOO_OFFLINE_LATENCY_MS": "100",
            "ARTOO_FANIN_DEADLINE_S": "60",
            "ARTOO_LEASE_S": "5",
        },
        concurrency=4,
    )
    api = Api(cluster.url, create_user(cluster, "alice"))
    db = Db(cluster)
    run_ids = [api.submit(TASK) for _ in range(RUNS)]
    # Kill while subtasks are running: some SubTasks taken, none finished yet.
    wait_for(
        lambda: (
            db.value("SELECT count(*) FROM artoo_web_busmessage WHERE type = 'SubTask'")
            >= 4
        ),
        60,
        what="subtasks dispatched",
    )
    cluster.kill("pipeline", signal.SIGKILL)
    in_flight = db.value(
        "SELECT count(*) FROM artoo_web_busmessage WHERE delivered_at IS NULL"
    )
    cluster.start_process("pipeline#2")
    cluster.wait_ready(names=("pipeline#2",))

    runs = api.wait_terminal(run_ids, 150)

    assert in_flight > 0, "the crash hit no work in flight; the test proved nothing"
    assert {r["status"] for r in runs.values()} == {"done"}, {
        k: (r["status"], (r["final_result"] or {}).get("summary"))
        for k, r in runs.items()
    }
    for run_id in run_ids:
        assert db.final_results(run_id) == 1
    wait_for(lambda: db.undelivered(run_ids) == 0, 30, what="every message delivered")


def test_worker_killed_while_planning_hands_the_plan_to_another_worker(
    start_cluster,
):
    with ScriptedLLMServer() as llm:
        script_roles(llm)
        llm.reply("R2", json.dumps(PLAN), delay_s=60)  # the first planner hangs
        cluster = start_cluster(
            env=llm.env(
                ARTOO_LLM_TIMEOUT_S="90",
                ARTOO_LLM_RETRIES="0",
                ARTOO_LEASE_S="3",
                ARTOO_MEMORY_TIMEOUT_S="30",
            )
        )
        api = Api(cluster.url, create_user(cluster, "alice"))
        run_id = api.submit("plan something")
        wait_for(lambda: llm.requests_for("R2"), 30, what="planning started")
        cluster.kill("pipeline", signal.SIGKILL)
        cluster.start_process("pipeline#2")
        cluster.wait_ready(names=("pipeline#2",))

        run = api.wait_terminal([run_id], 60)[run_id]

        assert run["status"] == "done", run["final_result"]
        assert len(llm.requests_for("R2")) == 2  # planned again, once
        assert Db(cluster).final_results(run_id) == 1
