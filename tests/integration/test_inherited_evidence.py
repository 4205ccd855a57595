"""A later group's claim is evidenced by the tool calls of the groups it was given.

Sequence 1 runs a real shell command; sequence 2 only reports its result and calls
no tool. R4a judges sequence 2 against sequence 1's evidence: a number that
evidence shows passes, a number it does not show fails the round.
"""

from __future__ import annotations

import json

import pytest

from artoo_web import runs
from artoo_web.models import BusMessage
from tests.integration.test_pipeline_llm import TASK_SPEC, _call, accept, text_of
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer, Step

pytestmark = pytest.mark.slow

NUMBER = {"type": "output_matches", "pattern": r"\d+"}


def two_groups() -> str:
    def subtask(intent: str, sequence: int) -> dict:
        criterion = {"criterion": "a number is stated", "check": NUMBER}
        return {"intent": intent, "success_criteria": [criterion], "sequence": sequence}

    return json.dumps(
        {
            "task_criteria": [],
            "subtasks": [subtask("sum-step", 1), subtask("report-step", 2)],
        }
    )


def executor(reported: str):
    """Sequence 1 sums with the shell; sequence 2 answers at once, no tool call."""

    def respond(request) -> Step | str:
        text = text_of(request)
        if "report-step" in text:
            return json.dumps({"status": "completed", "output": reported})
        if not any(m.get("role") == "tool" for m in request.messages):
            command = "echo $((40000 + 4025))"
            return Step(tool_calls=(_call("shell", {"command": command}),))
        return json.dumps({"status": "completed", "output": "44025"})

    return respond


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.default_reply(two_groups(), role="R2")
        server.responder(accept, role="R4b")
        # What the checks leave to the model (a step is done) is judged met.
        server.responder(done, role="R4a")
        yield server


def done(request) -> str:
    return json.dumps(
        {
            "verdict": "matched",
            "criteria_results": [{"criterion": "", "met": True, "evidence": "ran"}],
            "what_was_wrong": "",
            "what_to_do": "",
            "failure_reason": "",
        }
    )


def outcomes(run) -> dict[str, dict]:
    """Return the first round's outcomes by intent."""
    rows = BusMessage.objects.filter(run=run, type="SubTaskOutcome", round=0)
    return {m.payload["intent"]: m.payload for m in rows}


def test_a_report_of_the_earlier_groups_number_is_accepted(celery_worker, user, model):
    model.responder(executor("The total is 44025."), role="R3")
    run = finished(runs.submit(user, "check the server"))
    assert run.status == "done"
    report = outcomes(run)["report-step"]
    assert report["status"] == "matched"
    assert report["tool_calls"] == []
    # The earlier group's output reached the report's executor as its input.
    asked = [r for r in model.requests_for("R3") if "report-step" in text_of(r)]
    assert "44025" in text_of(asked[0])


def test_a_number_no_earlier_call_showed_fails_the_round(celery_worker, user, model):
    model.responder(executor("The total is 99."), role="R3")
    run = finished(runs.submit(user, "check the server"), timeout=90)
    assert run.status == "failed"
    report = outcomes(run)["report-step"]
    assert report["status"] == "failed"
    assert "'99'" in report["criteria_verdicts"][0]["evidence"]
    assert outcomes(run)["sum-step"]["status"] == "matched"
