"""R3 against the scripted model: prompts, tools, evidence, limits and parsing."""

from __future__ import annotations

import json

import pytest

from roles.contracts import CorrectionSignal, Criterion, SubTask
from roles.executor import execute, parse_final
from roles.llm.client import LLMCancelled, client_for
from roles.tools import Toolbox, ToolboxConfig
from roles.tools.errors import ToolError
from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec

SUBTASK = SubTask(
    subtask_id="sub-7",
    parent_task_id="task-1",
    # Not a question of a count: "done" answers it, and no form rule sends it back.
    intent="Show the lines of notes.txt",
    success_criteria=[
        "the line count is reported",
        Criterion(criterion="exit status 0", check={"type": "exit_code", "value": 0}),
    ],
    context="notes.txt is in the workspace",
)
FINAL = '{"status": "completed", "output": "3 lines"}'
DONE = '{"status": "completed", "output": "done"}'
DONE_JSON = json.loads(DONE)


@pytest.fixture
def llm_server():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    return tmp_path


def model(server, **env):
    return client_for(
        "R3", server.env(ARTOO_LLM_RETRIES="0", **env), sleep=lambda s: None
    )


def run(server, workspace, subtask=SUBTASK, toolbox=None, **kwargs):
    toolbox = toolbox or Toolbox(workspace)
    with model(server, **kwargs.pop("env", {})) as llm:
        return execute(subtask, model=llm, toolbox=toolbox, **kwargs)


def test_tool_calls_become_canonical_evidence_and_the_final_json_the_result(
    llm_server, workspace
):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", FINAL)
    execution = run(llm_server, workspace)
    result = execution.result
    assert (result.subtask_id, result.status, result.output) == (
        "sub-7",
        "completed",
        "3 lines",
    )
    assert result.tool_calls == [
        'shell: {"command": "wc -l < notes.txt"} → [exit code 0]\n3'
    ]
    assert [c.name for c in execution.calls] == ["shell"]
    assert len(execution.usage.calls) == 2
    tool_message = llm_server.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"] == "[exit code 0]\n3\n"


def test_the_prompt_carries_the_subtask_workspace_and_tools(llm_server, workspace):
    llm_server.reply("R3", FINAL)
    run(
        llm_server,
        workspace,
        toolbox=Toolbox(workspace, ToolboxConfig(blocked_tools=["search"])),
    )
    request = llm_server.requests[0]
    system, user = request.messages[0]["content"], request.messages[1]["content"]
    assert str(workspace.resolve()) in system
    assert "Blocked by GGS (do not try): search" in system
    assert '"status": "completed|uncertain|failed"' in system
    task = json.loads(user.split("Execute this SubTask:\n", 1)[1])
    assert task["success_criteria"] == ["the line count is reported", "exit status 0"]
    assert task["context"] == "notes.txt is in the workspace"
    names = [t["function"]["name"] for t in request.tools]
    assert names == [
        "shell",
        "glob",
        "read_file",
        "read_file_lines",
        "write_file",
        "create_file",
        "apply_edit",
        "fetch_url",
    ]


def test_the_correction_and_prior_outputs_are_in_the_prompt(llm_server, workspace):
    toolbox = Toolbox(workspace)
    toolbox.call("shell", {"command": "cat notes.txt"})
    correction = CorrectionSignal(
        subtask_id="sub-7",
        attempt_number=1,
        failed_criterion="the line count is reported",
        failure_class="logical",
        what_was_wrong="the output gave the file's content, not its count",
        what_to_do="run wc -l and report the number",
    )
    llm_server.reply("R3", FINAL)
    run(
        llm_server,
        workspace,
        toolbox=toolbox,
        correction=correction,
        attempt=2,
        prior_outputs="subtask 1 created notes.txt",
    )
    user = llm_server.requests[0].messages[1]["content"]
    assert "CORRECTION (this is attempt 2)" in user
    assert "Failed criterion: the line count is reported" in user
    assert "Failure class: logical" in user
    assert "What to do instead: run wc -l and report the number" in user
    assert '- shell: {"command": "cat notes.txt"}' in user
    assert "subtask 1 created notes.txt" in user


def offered(request) -> list[str]:
    """Return the tools (and final_answer) a schema-protocol request offers."""
    schema = request.response_format["json_schema"]["schema"]
    return [b["properties"]["name"]["const"] for b in schema["anyOf"]]


def test_an_attempt_answering_a_correction_must_call_a_tool_before_it_answers(
    llm_server, workspace
):
    correction = CorrectionSignal(
        subtask_id="sub-7",
        attempt_number=1,
        what_was_wrong="the claimed deletion is not shown by any tool output",
        what_to_do="delete it (rm notes.txt)",
    )
    call = {"name": "shell", "arguments": {"command": "wc -l < notes.txt"}}
    llm_server.reply("R3", json.dumps(call))
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": DONE_JSON}))
    env = {"ARTOO_TOOL_PROTOCOL": "schema"}
    execution = run(llm_server, workspace, correction=correction, attempt=2, env=env)
    first, second = llm_server.requests
    assert "final_answer" not in offered(first)
    assert offered(second)[-1] == "final_answer"
    assert execution.result.tool_calls[0].startswith('shell: {"command": "wc -l')
    assert execution.result.status == "completed"


def test_a_first_attempt_may_answer_at_once(llm_server, workspace):
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": DONE_JSON}))
    run(llm_server, workspace, env={"ARTOO_TOOL_PROTOCOL": "schema"})
    assert offered(llm_server.requests[0])[-1] == "final_answer"


def test_a_second_repeat_ends_the_calls_and_the_model_answers_from_its_results(
    llm_server, workspace
):
    # A small model ran its script, got the output, then ran it twice more.
    same = ("shell", {"command": "echo tick >> ticks.log"})
    for _ in range(3):
        llm_server.reply("R3", tool_calls=[same])
    llm_server.reply("R3", DONE)
    execution = run(llm_server, workspace)
    assert (workspace / "ticks.log").read_text() == "tick\n"
    warning = llm_server.requests[2].messages[-1]["content"]
    assert warning.startswith("DUPLICATE CALL BLOCKED: [shell]")
    answer_now = llm_server.requests[3]
    assert answer_now.messages[-1]["content"] == (
        "ERROR: [shell] was called with identical arguments 3 times in a row: no "
        "more tool calls in this attempt: give your final JSON answer now from the "
        "tool results above"
    )
    assert answer_now.tools is None
    assert execution.result.status == "completed"
    assert execution.result.output == "done"
    assert len(execution.result.tool_calls) == 1
    assert len(execution.usage.calls) == 4


def test_after_the_second_repeat_no_tool_runs_and_only_the_answer_is_offered(
    llm_server, workspace
):
    same = {"name": "shell", "arguments": {"command": "echo tick >> ticks.log"}}
    other = {"name": "shell", "arguments": {"command": "echo tock >> ticks.log"}}
    for call in (same, same, same, other):
        llm_server.reply("R3", json.dumps(call))
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": DONE_JSON}))
    execution = run(llm_server, workspace, env={"ARTOO_TOOL_PROTOCOL": "schema"})
    assert (workspace / "ticks.log").read_text() == "tick\n"
    assert [offered(r) for r in llm_server.requests[3:]] == [["final_answer"]] * 2
    assert "no more tool calls" in llm_server.requests[4].messages[-1]["content"]
    assert execution.result.status == "completed"


def test_a_blocked_repeat_in_a_corrected_attempt_repeats_the_correction(
    llm_server, workspace
):
    (workspace / "data.txt").write_text("a\nb\n")
    same = ("read_file", {"path": "data.txt"})
    for _ in range(2):
        llm_server.reply("R3", tool_calls=[same])
    llm_server.reply("R3", FINAL)
    correction = CorrectionSignal(
        subtask_id="sub-7",
        attempt_number=1,
        what_was_wrong="the claimed output states '100', which no tool output shows",
    )
    run(llm_server, workspace, correction=correction, attempt=2)
    warning = llm_server.requests[2].messages[-1]["content"]
    assert warning.startswith("DUPLICATE CALL BLOCKED: [read_file]")
    assert warning.endswith(
        "This attempt must fix what the validator found: the claimed output "
        "states '100', which no tool output shows"
    )


def test_a_different_call_in_between_resets_the_repeat_rule(llm_server, workspace):
    first = ("shell", {"command": "echo a >> log"})
    other = ("read_file", {"path": "log"})
    for call in (first, other, first):
        llm_server.reply("R3", tool_calls=[call])
    llm_server.reply("R3", DONE)
    execution = run(llm_server, workspace)
    assert execution.result.status == "completed"
    assert (workspace / "log").read_text() == "a\na\n"


def test_a_third_round_of_a_cycle_with_unchanged_results_ends_the_calls(
    llm_server, workspace
):
    # A real executor asked for db/config.yaml went glob, read_file, glob,
    # read_file … until its ten turns ran out, with no answer.
    look = ("glob", {"pattern": "**/*.yaml"})
    read = ("read_file", {"path": "db/config.yaml"})
    for call in (look, read, look, read, look, look):
        llm_server.reply("R3", tool_calls=[call])
    llm_server.reply("R3", DONE)
    execution = run(llm_server, workspace)
    warning = llm_server.requests[5].messages[-1]["content"]
    assert warning.startswith("CYCLE BLOCKED: this call would start a third round")
    ended = llm_server.requests[6].messages[-1]["content"]
    assert ended.startswith(
        "ERROR: a cycle of 2 calls was started again with the same results: no "
        "more tool calls"
    )
    names = [c.split(":")[0] for c in execution.result.tool_calls]
    assert names == ["glob", "read_file"] * 2
    assert execution.result.status == "completed"


def test_a_cycle_whose_results_changed_runs_on(llm_server, workspace):
    # The script works the second time: that round told the model something.
    run_it = ("shell", {"command": "echo x >> out.log; cat out.log"})
    look = ("read_file", {"path": "notes.txt"})
    for call in (run_it, look, run_it, look, run_it):
        llm_server.reply("R3", tool_calls=[call])
    llm_server.reply("R3", DONE)
    execution = run(llm_server, workspace)
    assert (workspace / "out.log").read_text() == "x\nx\nx\n"
    assert len(execution.result.tool_calls) == 5


def test_running_out_of_turns_fails_with_a_clear_reason(llm_server, workspace):
    counter = iter(range(100))
    llm_server.responder(
        lambda request: _call_shell(f"echo {next(counter)}"), role="R3"
    )
    execution = run(llm_server, workspace, max_turns=3)
    assert execution.result.status == "failed"
    assert execution.result.output == (
        "no final answer within 3 model turns; the attempt stopped"
    )
    assert len(llm_server.requests) == 3
    assert len(execution.result.tool_calls) == 3


def test_an_unparseable_final_message_is_uncertain_with_the_raw_text(
    llm_server, workspace
):
    # Answered without a tool call: the endpoint is asked again under the tool
    # schema, and says the same.
    llm_server.default_reply("I think there are three lines.", role="R3")
    result = run(llm_server, workspace).result
    assert len(llm_server.requests_for("R3")) == 2
    assert llm_server.requests_for("R3")[1].response_format["type"] == "json_schema"
    assert result.status == "uncertain"
    assert result.output == "I think there are three lines."


def test_a_final_message_in_a_fence_after_reasoning_is_parsed():
    text = (
        '<think>count</think>Done.\n```json\n{"status": "failed", "output": "no"}\n```'
    )
    assert parse_final(text) == ("failed", "no", None)
    assert parse_final('{"status": "maybe"}')[0] == "uncertain"


def test_tool_errors_reach_the_model_and_the_evidence(llm_server, workspace):
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "../../etc/passwd"})])
    for _ in range(2):
        llm_server.reply(
            "R3", '{"status": "failed", "output": "outside the workspace"}'
        )
    result = run(llm_server, workspace).result
    assert llm_server.requests[1].messages[-1]["content"].startswith("ERROR: path")
    assert "→ ERROR: path '../../etc/passwd' resolves to" in result.tool_calls[0]
    assert result.status == "failed"


def test_a_first_failed_answer_is_sent_back_with_the_last_result(llm_server, workspace):
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "nope.txt"})])
    llm_server.reply("R3", '{"status": "failed", "output": "no such file"}')
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", FINAL)
    execution = run(llm_server, workspace)
    assert (execution.result.status, execution.result.output) == (
        "completed",
        "3 lines",
    )
    sent_back = llm_server.requests[2].messages
    assert sent_back[-2] == {
        "role": "assistant",
        "content": '{"status": "failed", "output": "no such file"}',
    }
    assert sent_back[-1]["role"] == "user"
    assert sent_back[-1]["content"].startswith("Not yet: you reported failed after 1")
    assert "The last tool result (read_file):\nERROR:" in sent_back[-1]["content"]
    assert [c.name for c in execution.calls] == ["read_file", "shell"]


def test_an_answer_no_tool_output_shows_is_sent_back_once(llm_server, workspace):
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "notes.txt"})])
    llm_server.reply("R3", '{"status": "completed", "output": "1000 lines"}')
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", FINAL)
    counting = SUBTASK.model_copy(update={"intent": "Count the lines of notes.txt"})
    execution = run(llm_server, workspace, subtask=counting)
    assert execution.result.output == "3 lines"
    sent_back = llm_server.requests[2].messages[-1]["content"]
    assert sent_back.startswith("Not yet: the claimed output states '1000'")
    # The intent asks for the lines of the one file read: the command itself.
    assert "call the shell tool with the command wc -l notes.txt" in sent_back


def test_a_second_answer_without_evidence_is_taken_as_it_is(llm_server, workspace):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "true"})])
    for _ in range(2):
        llm_server.reply("R3", '{"status": "completed", "output": "42"}')
    execution = run(llm_server, workspace)
    assert (execution.result.status, execution.result.output) == ("completed", "42")
    assert len(llm_server.requests) == 3  # the second answer is taken as it is
    assert (
        "'42', which no tool output shows"
        in (llm_server.requests[2].messages[-1]["content"])
    )


def test_a_second_failed_answer_or_one_on_the_last_turn_is_taken(llm_server, workspace):
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "nope.txt"})])
    for _ in range(2):
        llm_server.reply("R3", '{"status": "failed", "output": "cannot"}')
    assert run(llm_server, workspace).result.status == "failed"
    assert len(llm_server.requests) == 3
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "nope.txt"})])
    llm_server.reply("R3", '{"status": "failed", "output": "cannot"}')
    assert run(llm_server, workspace, max_turns=2).result.status == "failed"
    assert len(llm_server.requests) == 5


def test_law1_denial_is_what_the_model_sees_and_nothing_is_deleted(
    llm_server, workspace
):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "rm -rf notes.txt"})])
    llm_server.reply("R3", '{"status": "failed", "output": "deletion was denied"}')
    result = run(llm_server, workspace).result
    assert (workspace / "notes.txt").exists()
    assert llm_server.requests[1].messages[-1]["content"] == (
        "[LAW1] rm deletes files permanently — denied by the operator"
    )
    assert result.tool_calls[0].endswith("denied by the operator")
    assert len(llm_server.requests) == 2  # a denial is final: not sent back


def test_the_model_reads_lines_and_edits_one_and_law1_asks_with_the_diff(
    llm_server, workspace
):
    lines = {"path": "notes.txt", "start": 2, "end": 3}
    edit = {"path": "notes.txt", "old": "b\n", "new": "beta\n"}
    llm_server.reply("R3", tool_calls=[("read_file_lines", lines)])
    llm_server.reply("R3", tool_calls=[("apply_edit", edit)])
    llm_server.reply("R3", DONE)
    asks = []
    toolbox = Toolbox(workspace, approve=lambda ask: asks.append(ask) or True)
    result = run(llm_server, workspace, toolbox=toolbox).result
    assert llm_server.requests[1].messages[-1]["content"] == (
        "[notes.txt: lines 2-3 of 3]\nL2: b\nL3: c"
    )
    assert (
        llm_server.requests[2]
        .messages[-1]["content"]
        .startswith("replaced 1 occurrence at line 2; wrote 9 bytes to ")
    )
    assert (workspace / "notes.txt").read_text() == "a\nbeta\nc\n"
    assert "-b\n+beta" in asks[0].changes[0]["diff"]
    assert [e.split(":", 1)[0] for e in result.tool_calls] == [
        "read_file_lines",
        "apply_edit",
    ]


def test_the_json_tool_protocol_works_too(llm_server, workspace):
    call = {"action": "tool", "tool": "shell", "args": {"command": "echo hi"}}
    llm_server.reply("R3", json.dumps(call))
    llm_server.reply("R3", DONE)
    result = run(llm_server, workspace, env={"ARTOO_TOOL_PROTOCOL": "json"}).result
    assert result.tool_calls == ['shell: {"command": "echo hi"} → [exit code 0]\nhi']
    assert result.status == "completed"


def test_an_endpoint_failure_is_a_failed_result_that_keeps_its_tool_calls(
    llm_server, workspace
):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "echo first"})])
    llm_server.fault("R3", status=500, message="model crashed")
    execution = run(llm_server, workspace)
    assert execution.result.status == "failed"
    assert execution.result.output.startswith("LLM error:")
    assert execution.error
    assert execution.result.uncertainty == f"LLM error: {execution.error}"
    assert execution.result.tool_calls[0].startswith('shell: {"command": "echo first"}')
    assert len(execution.usage.calls) == 1


def test_a_cancelled_run_raises_llm_cancelled(llm_server, workspace):
    with client_for("R3", llm_server.env(), cancelled=lambda: True) as llm:
        with pytest.raises(LLMCancelled):
            execute(SUBTASK, model=llm, toolbox=Toolbox(workspace))
    assert llm_server.requests == []


def _call_shell(command):
    return Step(tool_calls=(ToolCallSpec("shell", {"command": command}),))


def test_a_tool_the_server_cannot_offer_is_not_offered_nor_called_blocked_by_ggs(
    llm_server, workspace
):
    llm_server.reply("R3", FINAL)
    toolbox = Toolbox(
        workspace,
        ToolboxConfig(
            blocked_tools=["shell:awk"], unavailable_tools=["search", "fetch_url"]
        ),
    )
    run(llm_server, workspace, toolbox=toolbox)
    request = llm_server.requests[0]
    system = request.messages[0]["content"]
    assert "Blocked by GGS (do not try): " in system
    blocked = system.split("Blocked by GGS (do not try): ", 1)[1].split(".", 1)[0]
    assert "search" not in blocked and "fetch" not in blocked and "awk" in blocked
    names = [t["function"]["name"] for t in request.tools]
    assert names == [
        "shell",
        "glob",
        "read_file",
        "read_file_lines",
        "write_file",
        "create_file",
        "apply_edit",
    ]
    with pytest.raises(ToolError, match="'fetch_url' is not available on this server"):
        toolbox.call("fetch_url", {"url": "http://127.0.0.1:9/"})


def test_without_ggs_blocks_the_prompt_names_none(llm_server, workspace):
    llm_server.reply("R3", FINAL)
    toolbox = Toolbox(
        workspace, ToolboxConfig(unavailable_tools=["search", "fetch_url"])
    )
    run(llm_server, workspace, toolbox=toolbox)
    assert "Blocked by GGS" not in llm_server.requests[0].messages[0]["content"]


def test_an_attempt_that_answers_a_correction_is_sampled_warmer(llm_server, workspace):
    env = {"ARTOO_LLM_TEMPERATURE": "0", "ARTOO_RETRY_TEMPERATURE": "0.3"}
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", FINAL)
    run(llm_server, workspace, env=env)
    correction = CorrectionSignal(
        subtask_id="sub-7", attempt_number=1, what_was_wrong="no count"
    )
    llm_server.reply("R3", tool_calls=[("shell", {"command": "grep -c '' notes.txt"})])
    llm_server.reply("R3", FINAL)
    run(llm_server, workspace, env=env, correction=correction, attempt=2)
    llm_server.reply(
        "R3", tool_calls=[("shell", {"command": "awk 'END {print NR}' notes.txt"})]
    )
    llm_server.reply("R3", FINAL)
    run(llm_server, workspace, env=env, again=True)
    sampled = [r.body.get("temperature") for r in llm_server.requests]
    assert sampled == [0, 0, 0.3, 0.3, 0.3, 0.3]
