"""A model executor parked on an approval resumes its own conversation.

The scripted OpenAI-compatible model over real HTTP plays every role; R3 reads
a file that was in the workspace before it began, then deletes it (Law 1), then
answers. (A file the subtask made itself it may delete without asking.)
"""

from __future__ import annotations

import contextlib
import json
import os
import threading

import pytest

from artoo_web import runs, runtime
from artoo_web.models import Approval, BusMessage
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import TASK_SPEC, accept, judge, plan
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec

pytestmark = pytest.mark.slow

CALLS = [
    ToolCallSpec(name="shell", arguments={"command": "cat notes.txt"}, id="c1"),
    ToolCallSpec(name="shell", arguments={"command": "rm notes.txt"}, id="c2"),
]


class Executor:
    """Seed notes.txt in the run's workspace before R3's first turn, then call
    the next scripted tool after each tool result and report completion."""

    def __init__(self, calls=CALLS, output="notes.txt was removed"):
        self.run = None
        self.submitted = threading.Event()
        self.calls, self.output = calls, output

    def __call__(self, request) -> Step | str:
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done == 0 and self.submitted.wait(timeout=30):
            notes = runtime.workspace_for(self.run) / "notes.txt"
            if not notes.exists():
                notes.write_text("seed\n")
        if done < len(self.calls):
            return Step(tool_calls=(self.calls[done],))
        return json.dumps({"status": "completed", "output": self.output})


@pytest.fixture
def executor():
    return Executor()


@contextlib.contextmanager
def scripted(monkeypatch, executor, *steps: str):
    """Serve every role from the scripted model, R3 from ``executor``."""
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.reply("R2", plan(*steps))
        server.responder(executor, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


@pytest.fixture
def model(monkeypatch, executor):
    with scripted(monkeypatch, executor, "ok-step remove the notes") as server:
        yield server


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_the_resumed_executor_carries_on_its_conversation(
    celery_worker, user, model, executor, decision
):
    run = executor.run = runs.submit(user, "check the server")
    executor.submitted.set()
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
        'shell: {"command": "cat notes.txt"}',
        'shell: {"command": "rm notes.txt"}',
    ]


class Editor(Executor):
    """Seed notes.txt as the run's own files are owned: the sandbox's user may
    write it, as it may write a file a command of the run made."""

    def __call__(self, request) -> Step | str:
        step = super().__call__(request)
        notes = runtime.workspace_for(self.run) / "notes.txt"
        folder = notes.parent.stat()
        if os.geteuid() == 0 and notes.stat().st_uid != folder.st_uid:
            os.chown(notes, folder.st_uid, folder.st_gid)
        return step


EDIT_CALLS = [
    ToolCallSpec(
        name="apply_edit",
        arguments={"path": "notes.txt", "old": "seed", "new": "grown"},
        id="e1",
    ),
]


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_edit_of_a_file_that_was_there_parks_with_its_diff(
    celery_worker, user, monkeypatch, decision
):
    executor = Editor(EDIT_CALLS, "notes.txt was edited")
    with scripted(monkeypatch, executor, "ok-step edit the notes"):
        run = executor.run = runs.submit(user, "edit the notes")
        executor.submitted.set()
        approval = wait_until(
            lambda: Approval.objects.filter(run=run, status="pending").first(),
            timeout=60,
        )
        notes = runtime.workspace_for(run) / "notes.txt"
        assert approval.tool == "apply_edit"
        assert approval.command == f"apply_edit {notes}"
        (change,) = approval.changes
        assert change["diff"].splitlines()[-2:] == ["-seed", "+grown"]
        assert notes.read_bytes() == b"seed\n"
        runs.decide_approval(run, approval.id, decision, user)
        finished(run, timeout=90)
    assert notes.read_bytes() == (b"grown\n" if decision == "approve" else b"seed\n")
    assert Approval.objects.filter(run=run).count() == 1


OWN_CALLS = [
    ToolCallSpec(
        name="write_file", arguments={"path": "draft.txt", "content": "x\n"}, id="o1"
    ),
    ToolCallSpec(name="shell", arguments={"command": "rm notes.txt"}, id="o2"),
    ToolCallSpec(name="shell", arguments={"command": "rm draft.txt"}, id="o3"),
]


def test_a_file_the_subtask_made_stays_its_own_after_it_resumes(
    celery_worker, user, monkeypatch
):
    # Make draft.txt, delete the seeded notes.txt (asked), then draft.txt.
    executor = Executor(OWN_CALLS, "both files were removed")
    with scripted(monkeypatch, executor, "ok-step tidy the workspace"):
        run = executor.run = runs.submit(user, "tidy the workspace")
        executor.submitted.set()
        approval = wait_until(
            lambda: Approval.objects.filter(run=run, status="pending").first(),
            timeout=60,
        )
        assert approval.command == "rm notes.txt"
        runs.decide_approval(run, approval.id, "approve", user)
        run = finished(run, timeout=90)
    workspace = runtime.workspace_for(run)
    assert not (workspace / "notes.txt").exists()
    assert not (workspace / "draft.txt").exists()
    assert [a.command for a in Approval.objects.filter(run=run)] == ["rm notes.txt"]


def rewrite_the_draft(request) -> Step | str:
    """R3 of two subtasks: the first writes draft.txt anew, the second over it."""
    asked = " ".join(str(m.get("content")) for m in request.messages)
    second = "rewrite the draft" in asked
    if not any(m.get("role") == "tool" for m in request.messages):
        content = "second\n" if second else "first\n"
        call = ToolCallSpec(
            name="write_file", arguments={"path": "draft.txt", "content": content}
        )
        return Step(tool_calls=(call,))
    return json.dumps({"status": "completed", "output": "draft.txt written"})


def test_a_file_an_earlier_subtask_made_is_the_runs_own(
    celery_worker, user, monkeypatch
):
    steps = ("ok-step write the draft", "ok-step rewrite the draft")
    with scripted(monkeypatch, rewrite_the_draft, *steps):
        run = finished(runs.submit(user, "draft it twice"), timeout=90)
    assert run.status == "done"
    assert (runtime.workspace_for(run) / "draft.txt").read_text() == "second\n"
    assert not Approval.objects.filter(run=run).exists()
