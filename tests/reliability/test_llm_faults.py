"""A misbehaving model: retried, then a clear failure per run, never a hang."""

from __future__ import annotations

import pytest

from tests.llm_server import ScriptedLLMServer, Step
from tests.reliability.harness import Api, Db, create_user, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(240)]

RETRIES = 2
FAULTS = {
    "storm-429": Step(status=429, retry_after=0, error_message="slow down"),
    "error-500": Step(status=500, error_message="upstream exploded"),
    "hang": Step(delay_s=4.0, content="{}"),
    "garbage": Step(content="Sure! Here is my answer: ~~~ not json ~~~"),
    "truncated": Step(content='{"task_id": "half_a_reply", "intent": "half'),
    "broken-body": Step(malformed=True),
}

# What the run's summary says, so the operator knows why it failed.
REASONS = {
    "storm-429": "HTTP status 429",
    "error-500": "HTTP status 500",
    "hang": "no reply within 1 s",
    "garbage": "no JSON",
    "truncated": "never closed",
    "broken-body": "malformed response body",
}


def fault_of(request) -> Step:
    text = "\n".join(str(m.get("content") or "") for m in request.messages)
    return next(step for name, step in FAULTS.items() if f"fault={name}" in text)


def test_every_model_fault_ends_its_run_with_a_clear_failure(start_cluster):
    with ScriptedLLMServer() as llm:
        llm.responder(fault_of)
        cluster = start_cluster(
            env=llm.env(
                ARTOO_LLM_TIMEOUT_S="1",
                ARTOO_LLM_RETRIES=str(RETRIES),
                ARTOO_LLM_BACKOFF_S="0.05",
                ARTOO_RUN_DEADLINE_S="60",
                ARTOO_FANIN_DEADLINE_S="30",
            )
        )
        api = Api(cluster.url, create_user(cluster, "alice"))
        db = Db(cluster)
        runs = {name: api.submit(f"list the files fault={name}") for name in FAULTS}

        ended = api.wait_terminal(list(runs.values()), 150)

        for name, run_id in runs.items():
            run = ended[run_id]
            final = run["final_result"]
            assert run["status"] == "failed", (name, run["status"])
            assert final["directive"] == "abandon", name
            assert "R2 planning failed" in final["summary"], name
            assert REASONS[name] in final["summary"], (name, final["summary"])
            assert db.final_results(run_id) == 1, name
            calls = [r for r in llm.requests if r.header("X-Artoo-Run") == run_id]
            assert calls, name
        for name in ("storm-429", "error-500", "hang", "broken-body"):
            calls = [r for r in llm.requests if r.header("X-Artoo-Run") == runs[name]]
            r1 = [r for r in calls if r.role == "R1"]
            assert len(r1) == RETRIES + 1, (name, len(r1))
        wait_for(lambda: db.undelivered(list(runs.values())) == 0, 30, what="delivered")
