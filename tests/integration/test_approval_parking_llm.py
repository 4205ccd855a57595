"""A model executor parked on an approval resumes its own conversation.

The scripted OpenAI-compatible model over real HTTP plays every role; R3 writes
a file, then deletes it (Law 1), then answers.
"""

from __future__ import annotations

import json

import pytest

from artoo_web import runs, runtime
from artoo_web.models import Approval, BusMessage
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import TASK_SPEC, accept, judge, plan
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec

pytestmark = pytest.mark.slow

CALLS = [
    ToolCallSpec(name="shell", arguments={"command": "echo seed > notes.txt"}, id="c1"),
    ToolCallSpec(name="shell", arguments={"command": "rm notes.txt"}, id="c2"),
]


def execute(request) -> Step | str:
    """Call the next scripted tool after each tool result, then report completion."""
    done = sum(1 for m in request.messages if m.get("role") == "tool")
    if done < len(CALLS):
        return Step(tool_calls=(CALLS[done],))
    return json.dumps({"status": "completed", "output": "notes.txt was removed"})


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.reply("R2", plan("ok-step remove the notes"))
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_the_resumed_executor_carries_on_its_conversation(
    celery_worker, user, model, decision
):
    run = runs.submit(user, "check the server")
    approval = wait_until(
        lambda: Approval.objects.filter(run=run, status="pending").first(), timeout=60
    )
    assert approval.command == "rm notes.txt"
    assert len(model.requests_for("R3")) == 2
    runs.decide_approval(run, approval.id, decision, user)
    run = finished(run, timeout=90)
    resumed = model.requests_for("R3")[2]
    roles = [m["role"] for m in resumed.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    answer = resumed.messages[-1]
    assert answer["tool_call_id"] == "c2"
    notes = runtime.workspace_for(run) / "notes.txt"
    if decision == "approve":
        assert answer["content"].startswith("[exit code 0]")
        assert not notes.exists()
    else:
        assert answer["content"].startswith("[LAW1]")
        assert notes.read_text() == "seed\n"
    result = BusMessage.objects.filter(run=run, type="ExecutionResult").first()
    assert [e.split(" → ")[0] for e in result.payload["tool_calls"]] == [
        'shell: {"command": "echo seed > notes.txt"}',
        'shell: {"command": "rm notes.txt"}',
    ]
