"""R3 shortens a long result the model has used; its records and evidence do not."""

from __future__ import annotations

import pytest

from roles.claims.evidence import format_evidence
from roles.contracts import SubTask
from roles.executor import execute
from roles.llm.client import client_for
from roles.tools import Toolbox
from tests.llm_server import ScriptedLLMServer

SUBTASK = SubTask(
    subtask_id="sub-9",
    parent_task_id="task-1",
    intent="Show the numbers up to 600, then count the lines of notes.txt",
    success_criteria=["the line count is reported"],
    context="notes.txt is in the workspace",
)
FINAL = '{"status": "completed", "output": "3 lines"}'
SEQ = {"command": "seq 1 600"}
WHOLE = "[exit code 0]\n" + "".join(f"{n}\n" for n in range(1, 601))


@pytest.fixture
def llm_server():
    with ScriptedLLMServer() as server:
        yield server


def test_the_model_sees_a_digest_while_records_and_evidence_keep_the_output(
    llm_server, tmp_path
):
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    llm_server.reply("R3", tool_calls=[("shell", SEQ)])
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", FINAL)
    toolbox = Toolbox(tmp_path)
    env = llm_server.env(ARTOO_LLM_RETRIES="0")
    with client_for("R3", env, sleep=lambda s: None) as llm:
        execution = execute(SUBTASK, model=llm, toolbox=toolbox)
    second, third = llm_server.requests[1:]
    assert second.messages[-1]["content"] == WHOLE
    told = third.messages[3]["content"]
    assert told.startswith(
        f"[earlier result of shell seq 1 600: exit 0, 600 lines, {len(WHOLE):,} "
        "bytes; head and tail kept]\n1\n2\n3\n4\n5\n...\n596\n"
    )
    assert "\n150\n" not in told
    assert execution.calls[0].output == toolbox.records[0].output == WHOLE
    evidence = execution.result.tool_calls
    assert evidence[0] == format_evidence("shell", SEQ, WHOLE)
    assert "\n150\n" in evidence[0]
    assert execution.result.status == "completed"
