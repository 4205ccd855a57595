"""What a small local model's server needs: calls written as text, a small window."""

from __future__ import annotations

import json

from roles.llm.client import client_for
from roles.toolloop import run_tool_loop
from tests.integration.llm.test_toolloop import FINAL, READ, SHELL, TASK, FakeShell
from tests.llm_server import ScriptedLLMServer

FENCED_CALL = '```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```'


def test_a_call_written_as_text_runs_and_the_endpoint_switches_to_schema(llm_server):
    llm_server.reply("R3", FENCED_CALL)
    llm_server.reply(
        "R3", json.dumps({"name": "read_file", "arguments": {"path": "a"}})
    )
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": {"x": 1}}))
    tools = FakeShell()
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL, READ], tools)
        assert llm.tool_protocol == "schema"
    assert tools.calls == [("shell", {"command": "ls"}), ("read_file", {"path": "a"})]
    assert json.loads(result.final_content) == {"x": 1}
    first, second, third = llm_server.requests
    assert first.tools and first.response_format is None
    assert second.tools is None
    schema = second.response_format["json_schema"]["schema"]
    names = [b["properties"]["name"]["const"] for b in schema["anyOf"]]
    assert names == ["shell", "read_file", "final_answer"]
    assert "Tool shell result:" in second.messages[-1]["content"]
    modes = [c.mode for c in result.usage.calls]
    assert modes == ["tools:native", "tools:schema", "tools:schema"]


def test_the_next_loop_on_that_endpoint_starts_with_the_schema(llm_server):
    llm_server.reply("R3", FENCED_CALL)
    llm_server.reply("R3", FINAL)
    llm_server.reply("R3", FINAL)
    with client_for("R3", llm_server.env()) as llm:
        run_tool_loop(llm, TASK, [SHELL], FakeShell())
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell())
    assert llm_server.requests[-1].tools is None
    assert llm_server.requests[-1].response_format["type"] == "json_schema"
    assert json.loads(result.final_content)["status"] == "completed"


def test_a_forced_native_protocol_never_switches(llm_server):
    llm_server.reply("R3", FENCED_CALL)
    tools = FakeShell()
    env = llm_server.env(ARTOO_TOOL_PROTOCOL="native")
    with client_for("R3", env) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], tools)
        assert llm.tool_protocol == "native"
    assert tools.calls == [] and result.final_content == FENCED_CALL


def test_a_prompt_over_the_reported_window_is_fitted_not_refused():
    with ScriptedLLMServer(context_tokens=600) as server:
        server.default_reply("ok", role="R5")
        long = [
            {"role": "system", "content": "Summarise the log."},
            {"role": "user", "content": "line of log output\n" * 2000},
        ]
        with client_for("R5", server.env()) as llm:
            text, usage = llm.complete_text(long)
            assert llm.caps.context_tokens == 600
        sent = server.requests[0]
    assert text == "ok"
    assert sent.messages[0]["content"] == "Summarise the log."
    assert "[trimmed to fit the context window]" in sent.messages[1]["content"]
    assert sent.body["max_tokens"] == 150
    assert sum(len(m["content"]) for m in sent.messages) // 4 <= 600


def test_the_window_can_be_set_where_the_endpoint_does_not_say():
    with ScriptedLLMServer() as server:
        server.default_reply("ok", role="R5")
        with client_for("R5", server.env(ARTOO_CONTEXT_TOKENS="2048")) as llm:
            llm.complete_text([{"role": "user", "content": "hi"}])
            assert llm.caps.context_tokens == 2048
        assert server.requests[0].body["max_tokens"] == 512


def test_sampling_is_sent_only_when_set(llm_server):
    llm_server.default_reply("ok", role="R5")
    message = [{"role": "user", "content": "hi"}]
    with client_for("R5", llm_server.env()) as llm:
        llm.complete_text(message)
    env = llm_server.env(ARTOO_LLM_TEMPERATURE="0", ARTOO_LLM_SEED="42")
    with client_for("R5", env) as llm:
        llm.complete_text(message)
    default, greedy = llm_server.requests
    assert "temperature" not in default.body and "seed" not in default.body
    assert greedy.body["temperature"] == 0 and greedy.body["seed"] == 42


def test_without_a_window_nothing_is_cut(llm_server):
    llm_server.default_reply("ok", role="R5")
    message = {"role": "user", "content": "x" * 50_000}
    with client_for("R5", llm_server.env()) as llm:
        llm.complete_text([message])
        assert llm.caps.context_tokens is None
    assert llm_server.requests[0].messages[0]["content"] == message["content"]
    assert "max_tokens" not in llm_server.requests[0].body


def test_an_answer_without_any_call_is_asked_again_under_the_tool_schema(llm_server):
    llm_server.reply("R3", '{"status": "completed", "output": "3 files"}')
    llm_server.reply(
        "R3", json.dumps({"name": "shell", "arguments": {"command": "ls"}})
    )
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": {"n": 3}}))
    tools = FakeShell()
    with client_for("R3", llm_server.env()) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], tools)
        assert llm.tool_protocol == "schema"
    assert tools.calls == [("shell", {"command": "ls"})]
    assert json.loads(result.final_content) == {"n": 3}


def test_an_endpoint_seen_calling_natively_keeps_its_protocol(llm_server):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "ls"})])
    llm_server.reply("R3", FINAL)
    llm_server.reply("R3", FINAL)
    with client_for("R3", llm_server.env()) as llm:
        run_tool_loop(llm, TASK, [SHELL], FakeShell())
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell())
        assert llm.tool_protocol == "native"
    assert result.final_content == FINAL and len(llm_server.requests) == 3


def branch_names(request) -> list[str]:
    schema = request.response_format["json_schema"]["schema"]
    return [b["properties"]["name"]["const"] for b in schema["anyOf"]]


def test_a_loop_that_must_act_first_is_offered_no_answer_before_its_first_call(
    llm_server,
):
    llm_server.reply(
        "R3", json.dumps({"name": "shell", "arguments": {"command": "ls"}})
    )
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": {"x": 1}}))
    env = llm_server.env(ARTOO_TOOL_PROTOCOL="schema")
    tools = FakeShell()
    with client_for("R3", env) as llm:
        result = run_tool_loop(llm, TASK, [SHELL, READ], tools, act_first=True)
    first, second = llm_server.requests
    assert branch_names(first) == ["shell", "read_file"]
    assert branch_names(second) == ["shell", "read_file", "final_answer"]
    assert tools.calls == [("shell", {"command": "ls"})]
    assert json.loads(result.final_content) == {"x": 1}


def test_a_loop_that_need_not_act_first_is_offered_the_answer_at_once(llm_server):
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": {"x": 2}}))
    env = llm_server.env(ARTOO_TOOL_PROTOCOL="schema")
    with client_for("R3", env) as llm:
        result = run_tool_loop(llm, TASK, [SHELL], FakeShell())
    assert branch_names(llm_server.requests[0]) == ["shell", "final_answer"]
    assert json.loads(result.final_content) == {"x": 2}
