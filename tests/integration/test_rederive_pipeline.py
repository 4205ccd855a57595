"""A number resting on one computation is derived again through the pipeline.

The scripted executor answers the first attempt with one program; the second
derivation, asked blind with that command blocked, gets another number, and
the attempt fails with both results as its correction; the next attempt and
its second derivation agree, and the run accepts what both showed.
"""

from __future__ import annotations

import json

import pytest

from artoo_web import runs
from artoo_web.models import BusMessage, TraceEvent
from tests.integration.test_pipeline_llm import _call, accept, text_of
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer, Step

pytestmark = pytest.mark.slow

REQUEST = "How many requests did alice make?"
PLAN = {
    "task_criteria": [],
    "subtasks": [{"intent": "count alice's requests", "success_criteria": []}],
}
# What each derivation runs: the first attempt's (a wrong count), the second
# derivations' and the corrected attempt's (the right one), each its own way.
FIRST, AGAIN, FIXED = (
    "seq 240 | wc -l",
    "seq 17 | awk 'END {print NR}'",
    "seq 17 | sort -u | wc -l",
)


def executor(request) -> Step | str:
    text = text_of(request)
    if "An earlier derivation used" in text:
        command = AGAIN
    elif "CORRECTION" in text:
        command = FIXED
    else:
        command = FIRST
    results = [m for m in request.messages if m.get("role") == "tool"]
    if not results:
        return Step(tool_calls=(_call("shell", {"command": command}),))
    printed = str(results[-1]["content"]).split()[-1]
    return json.dumps({"status": "completed", "output": printed})


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        monkeypatch.setenv("ARTOO_REDERIVE", "on")
        server.default_reply(
            json.dumps({"task_id": "alice", "intent": REQUEST, "raw_input": REQUEST}),
            role="R1",
        )
        server.default_reply(json.dumps(PLAN), role="R2")
        server.responder(executor, role="R3")
        server.responder(accept, role="R4b")
        yield server


def test_a_disagreement_is_corrected_and_an_agreement_accepted(
    celery_worker, user, model
):
    run = finished(runs.submit(user, REQUEST), timeout=90)
    assert run.status == "done"
    results = BusMessage.objects.filter(run=run, type="ExecutionResult").order_by("id")
    ran = [json.loads(r.payload["tool_calls"][0].split(": ", 1)[1].split(" →")[0])
           for r in results]  # fmt: skip
    assert [c["command"] for c in ran] == [FIRST, AGAIN, FIXED, AGAIN]
    # The second derivations asked the request again, blind to the first answer.
    blind = [
        r for r in model.requests_for("R3") if "An earlier derivation" in text_of(r)
    ]
    assert blind and all("240" not in text_of(r).split("ran `")[0] for r in blind)
    correction = BusMessage.objects.get(run=run, type="CorrectionSignal").payload
    assert "two derivations disagree" in correction["what_was_wrong"]
    assert "gave 240" in correction["what_was_wrong"]
    assert "gave 17" in correction["what_was_wrong"]
    outcome = BusMessage.objects.get(run=run, type="SubTaskOutcome").payload
    assert outcome["status"] == "matched"
    assert outcome["criteria_verdicts"][-1]["rule"] == "re-derived"
    assert "both give 17" in outcome["criteria_verdicts"][-1]["evidence"]
    # What each second derivation cost is in the trace.
    costs = TraceEvent.objects.filter(run=run, kind="rederivation")
    assert costs.count() == 2
    assert all(c.data["model_calls"] == 2 and c.data["tokens"] > 0 for c in costs)


def test_without_rederivation_the_first_number_stands(
    celery_worker, user, model, monkeypatch
):
    monkeypatch.setenv("ARTOO_REDERIVE", "off")
    run = finished(runs.submit(user, REQUEST), timeout=90)
    assert run.status == "done"
    assert BusMessage.objects.filter(run=run, type="ExecutionResult").count() == 1
    assert not any(
        "An earlier derivation" in text_of(r) for r in model.requests_for("R3")
    )
