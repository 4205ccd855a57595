"""Memory read back through the pipeline: operator rules, failed targets, related tasks.

The scripted model server records every request, so a test reads what R1 and
R2 were told; memory is the session's real LevelDB behind the memory worker.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from artoo_web import runs, runtime
from artoo_web.handlers import memory as memory_worker
from artoo_web.models import Run, TraceEvent
from roles.ggs.megrams import make_megram
from roles.memory_contracts import owner_for_user
from roles.tools import Toolbox, ToolError
from tests.conftest import wait_until
from tests.integration.test_pipeline_llm import (
    TASK_SPEC,
    accept,
    execute,
    judge,
    plan,
    text_of,
)
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.slow

AVOIDED = "echo from-memory-avoided"


@pytest.fixture
def llm(monkeypatch):
    """Serve the scripted roles of the pipeline tests; R2's plans are queued."""
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        yield server


@pytest.fixture
def remember(celery_worker):
    """Remember texts as an operator does (``manage.py memory remember``)."""
    texts = []

    def remember(text: str) -> None:
        call_command("memory", "remember", text, stdout=io.StringIO())
        texts.append(text)

    yield remember
    for megram in memory_worker.store().query_c("global:user", "env:local"):
        if megram.content in texts:
            memory_worker.forget(megram.id)


def test_a_remembered_rule_reaches_the_planners_prompt(remember, user, llm):
    remember("Never restart the production database.")
    llm.reply("R2", plan("ok-step one"))
    finished(runs.submit(user, "check the server"))
    assert (
        "OPERATOR RULES (remembered by the operator — obey these):\n"
        "  - Never restart the production database.\n"
    ) in text_of(llm.requests_for("R2")[0])


def test_a_remembered_rule_reaches_the_fast_path(remember, user, llm):
    remember("The operator's name is Ann.")
    run = runs.submit(user, "who are you?")
    wait_until(lambda: llm.requests_for("R1"), what="R1 asked")
    finished(run)
    assert "The operator's name is Ann." in text_of(llm.requests_for("R1")[0])


def test_a_target_that_failed_in_an_earlier_task_is_refused(celery_worker, user, llm):
    failed = make_megram(
        "tool:shell", f"target:{AVOIDED}", "count: wrong tool", "change_approach"
    )
    # An earlier task of this user: another user's failures are not its to read.
    failed = memory_worker.store().write(
        failed.model_copy(update={"owner": owner_for_user(user.pk)})
    )
    try:
        llm.reply("R2", plan("ok-step one"))
        run = finished(runs.submit(user, "check the server"))
    finally:
        memory_worker.forget(failed.id)
    # The task's intent names nothing of it: the planner is not told another
    # task's command (it would copy its steps), but the tool layer refuses it.
    assert AVOIDED not in text_of(llm.requests_for("R2")[0])
    # The executor builds its Toolbox with the rules R2 kept in the run state.
    rules = Run.objects.get(id=run.id).load_state().memory_rules()
    toolbox = Toolbox(runtime.workspace_for(run), memory_rules=rules)
    with pytest.raises(ToolError, match=f"avoided by memory: shell '{AVOIDED}'"):
        toolbox.call("shell", {"command": AVOIDED})
    assert toolbox.call("shell", {"command": "echo fine"}).startswith("[exit code 0]")


def spec(task_id: str, intent: str) -> str:
    return json.dumps(
        {"task_id": task_id, "intent": intent, "constraints": {}, "raw_input": intent}
    )


def test_a_related_past_task_is_recalled_under_another_task_id(
    celery_worker, user, llm
):
    llm.reply("R1", spec("tally_widget_ledger", "tally the widget inventory ledger"))
    llm.reply("R2", plan("ok-step tally"))
    first = finished(runs.submit(user, "tally the widget inventory ledger"))
    assert first.status == "done"
    wait_until(
        lambda: memory_worker.store().query_recent(
            "intent:tally_widget_ledger", "env:local", 1
        ),
        what="the first run's Megram stored",
    )
    llm.reply("R1", spec("review_ledger_widgets", "review the widget inventory ledger"))
    llm.reply("R2", plan("ok-step review"))
    second = finished(runs.submit(user, "review the widget inventory ledger"))
    prompt = text_of(llm.requests_for("R2")[-1])
    assert "(from the related task: tally the widget inventory ledger)" in prompt
    (event,) = TraceEvent.objects.filter(run=second, kind="memory_related")
    assert event.data["related"][0]["intent"] == "tally the widget inventory ledger"
    assert event.data["related"][0]["space"] == "intent:tally_widget_ledger"
