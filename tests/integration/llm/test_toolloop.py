"""The executor's tool loop, native and JSON-in-text, against the scripted model."""

from __future__ import annotations

import json

import pytest

from roles.llm.client import LLMCancelled, ToolSpec, client_for
from roles.llm.jsonparse import extract_json
from roles.toolloop import run_tool_loop
from roles.tools.errors import ToolError
from tests.llm_server import ToolCallSpec

SHELL = ToolSpec(
    "shell",
    "Run a shell command and return its output.",
    {"type": "object", "properties": {"command": {"type": "string"}}},
)
READ = ToolSpec(
    "read_file",
    "Return a file's text.",
    {"type": "object", "properties": {"path": {"type": "string"}}},
)
TASK = [
    {"role": "system", "content": "You are the executor."},
    {"role": "user", "content": "Count the files."},
]
FINAL = '{"status": "completed", "output": "3 files"}'


class FakeShell:
    """Stand-in tools: record each call and answer from a table."""

    def __init__(self, answers=None):
        self.calls = []
        self.answers = answers or {}

    def __call__(self, name, args):
        self.calls.append((name, dict(args)))
        answer = self.answers.get(name, "a\nb\nc")
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_native_loop_runs_tools_and_returns_the_final_content(llm_server):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "ls"})], usage=(100, 10))
    llm_server.reply("R3", FINAL, usage=(150, 20))
    tools = FakeShell()
    with client_for("R3", llm_server.env(), run_id="run-7") as llm:
        result = run_tool_loop(llm, TASK, [SHELL, READ], tools)
    assert result.final_content == FINAL
    assert result.exhausted is False and result.turns == 2
    assert tools.calls == [("shell", {"command": "ls"})]
    assert [(c.name, c.args, c.output, c.error) for c in result.calls] == [
        ("shell", {"command": "ls"}, "a\nb\nc", False)
    ]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (250, 30)
    assert len(result.usage.calls) == 2


def test_native_loop_sends_tool_specs_and_tool_results_back(llm_server):
    llm_server.reply("R3", tool_calls=[ToolCallSpec("shell", {"command": "ls"}, "c1")])
    llm_server.reply("R3", FINAL)
    with client_for("R3", llm_server.env()) as llm:
        run_tool_loop(llm, TASK, [SHELL], FakeShell())
    first, second = llm_server.requests
    assert first.tools == [SHELL.as_openai()]
    assert first.response_format is None
    assistant, tool = second.messages[-2:]
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert assistant["tool_calls"][0]["function"]["name"] == "shell"
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "a\nb\nc"}


def test_several_tool_calls_in_one_turn_all_run_in_order(llm_server):
    llm_server.reply(
        "R3",
        tool_calls=[("shell", {"command": "ls"}), ("read_file", {"path": "a"})],
    )
    llm_server.reply("R3", FINAL)
    tools = FakeShell({"read_file": "alpha"})
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL, READ], tools)
    assert [c.name for c in result.calls] == ["shell", "read_file"]
    results = [m for m in llm_server.requests[1].messages if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["a\nb\nc", "alpha"]


def test_malformed_arguments_go_back_to_the_model_as_a_tool_error(llm_server):
    llm_server.reply("R3", tool_calls=[("shell", '{"command": "ls"')])
    llm_server.reply("R3", FINAL)
    tools = FakeShell()
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], tools)
    assert tools.calls == []
    (call,) = result.calls
    assert call.error and call.output.startswith("ERROR: arguments are not valid JSON")
    sent_back = llm_server.requests[1].messages[-1]
    assert sent_back["role"] == "tool" and sent_back["content"] == call.output
    assert result.final_content == FINAL


def test_unknown_tool_and_tool_errors_are_reported_not_raised(llm_server):
    llm_server.reply("R3", tool_calls=[("rm_rf", {}), ("shell", {"command": "x"})])
    llm_server.reply("R3", FINAL)
    tools = FakeShell({"shell": ToolError("exit status 127: x: not found")})
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], tools)
    outputs = [c.output for c in result.calls]
    assert outputs == [
        "ERROR: unknown tool 'rm_rf'; available: shell",
        "ERROR: exit status 127: x: not found",
    ]
    assert tools.calls == [("shell", {"command": "x"})]


def test_a_model_that_never_stops_calling_tools_exhausts_the_turn_limit(llm_server):
    llm_server.default_reply(role="R3", tool_calls=[("shell", {"command": "ls"})])
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell(), max_turns=3)
    assert result.exhausted is True
    assert result.final_content is None
    assert result.turns == 3 and len(result.calls) == 3
    assert len(llm_server.requests) == 3


def test_a_first_reply_without_a_call_switches_an_auto_endpoint_off_native(
    llm_server,
):
    llm_server.reply("R3", FINAL)
    llm_server.reply("R3", FINAL)
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell())
        protocol = llm.tool_protocol
    assert result.final_content == FINAL and result.turns == 2
    assert protocol != "native"
    assert llm_server.requests[1].tools is None


def test_optional_tools_take_a_first_reply_without_a_call_as_the_answer(llm_server):
    llm_server.reply("R3", FINAL)
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell(), expect_tools=False)
        protocol = llm.tool_protocol
    assert result.final_content == FINAL and result.turns == 1
    assert protocol == "native"
    assert len(llm_server.requests) == 1


def test_turn_limit_must_be_positive(llm_server):
    with client_for("R3", llm_server.env()) as llm:
        with pytest.raises(ValueError, match="max_turns"):
            run_tool_loop(llm, TASK, [SHELL], FakeShell(), max_turns=0)


def test_cancelled_run_stops_the_loop_before_the_next_turn(llm_server):
    cancelled = []
    llm_server.default_reply(role="R3", tool_calls=[("shell", {"command": "ls"})])

    def tool_then_cancel(name, args):
        cancelled.append(True)
        return "ok"

    with client_for("R3", llm_server.env(), cancelled=lambda: bool(cancelled)) as llm:
        with pytest.raises(LLMCancelled):
            run_tool_loop(llm, TASK, [SHELL], tool_then_cancel)
    assert len(llm_server.requests) == 1


def json_client(server):
    return client_for("R3", server.env(ARTOO_TOOL_PROTOCOL="json"))


def test_json_protocol_runs_tools_named_in_the_text(llm_server):
    call = {"action": "tool", "tool": "shell", "args": {"command": "ls"}}
    llm_server.reply("R3", "<think>plan</think>Calling:\n" + json.dumps(call) + "\nok?")
    llm_server.reply("R3", "```json\n" + FINAL + "\n```")
    tools = FakeShell()
    with json_client(llm_server) as llm:
        result = run_tool_loop(llm, TASK, [SHELL, READ], tools)
    assert tools.calls == [("shell", {"command": "ls"})]
    assert extract_json(result.final_content) == json.loads(FINAL)
    first, second = llm_server.requests
    assert first.tools is None
    assert first.response_format == {"type": "json_object"}
    protocol = first.messages[1]
    assert protocol["role"] == "system" and first.messages[0] == TASK[0]
    assert '"action": "tool"' in protocol["content"]
    assert "- shell: Run a shell command" in protocol["content"]
    assert "- read_file:" in protocol["content"]
    assert second.messages[-1] == {
        "role": "user",
        "content": "Tool shell result:\na\nb\nc",
    }
    assert "<think>" not in second.messages[-2]["content"]


def test_json_protocol_accepts_flat_arguments(llm_server):
    llm_server.reply(
        "R3", '{"action": "tool", "tool": "read_file", "path": "notes.txt"}'
    )
    llm_server.reply("R3", FINAL)
    tools = FakeShell()
    with json_client(llm_server) as llm:
        run_tool_loop(llm, TASK, [READ], tools)
    assert tools.calls == [("read_file", {"path": "notes.txt"})]


def test_json_protocol_reports_a_broken_tool_call_and_carries_on(llm_server):
    llm_server.reply(
        "R3", '{"action": "tool", "tool": "shell", "args": {"command": "ls"'
    )
    llm_server.reply("R3", '{"action": "tool", "tool": "shell", "args": "ls"}')
    llm_server.reply("R3", FINAL)
    tools = FakeShell()
    with json_client(llm_server) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], tools)
    assert tools.calls == []
    second, third = llm_server.requests[1:]
    assert "could not be parsed" in second.messages[-1]["content"]
    assert "never closed" in second.messages[-1]["content"]
    assert (
        third.messages[-1]["content"] == "Tool shell ERROR: args must be a JSON object"
    )
    assert result.final_content == FINAL and result.turns == 3


def test_json_protocol_treats_any_other_reply_as_final(llm_server):
    llm_server.reply("R3", "The directory holds three files.")
    with json_client(llm_server) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell())
    assert result.final_content == "The directory holds three files."
    assert result.calls == () and result.turns == 1
