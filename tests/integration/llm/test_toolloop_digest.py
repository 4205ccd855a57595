"""The tool loop shortens a long result once the model has used it, once only."""

from __future__ import annotations

import json

import pytest

from roles.llm.client import ToolSpec, client_for
from roles.toolloop import run_tool_loop
from roles.tools.errors import ToolPaused

SHELL = ToolSpec(
    "shell",
    "Run a shell command and return its output.",
    {"type": "object", "properties": {"command": {"type": "string"}}},
)
TASK = [
    {"role": "system", "content": "You are the executor."},
    {"role": "user", "content": "Count the files."},
]
FINAL = '{"status": "completed", "output": "200 files"}'
LONG = "[exit code 0]\n" + "".join(f"file{i:03}.csv\n" for i in range(200))
SHORT = "[exit code 0]\n200\n"
ANSWERS = {"ls": LONG, "ls -a": LONG, "ls | wc -l": SHORT}


def shell(name, args):
    return ANSWERS[args["command"]]


def script(server, *commands):
    for command in commands:
        server.reply("R3", tool_calls=[("shell", {"command": command})])
    server.reply("R3", FINAL)


def run(server, *, shorten_used=True, env=None):
    with client_for("R3", server.env(**(env or {}))) as llm:
        return run_tool_loop(llm, TASK, [SHELL], shell, shorten_used=shorten_used)


def contents(request):
    return [m.get("content") for m in request.messages]


def test_a_long_result_is_whole_once_then_a_digest_with_its_head_and_tail(
    llm_server,
):
    script(llm_server, "ls", "ls | wc -l")
    result = run(llm_server)
    second, third = llm_server.requests[1:]
    assert contents(second)[-1] == LONG
    told = contents(third)[3]
    assert told.startswith(
        f"[earlier result of shell ls: exit 0, 200 lines, {len(LONG):,} bytes; "
        "head and tail kept]\nfile000.csv\n"
    )
    assert told.endswith(
        "...\nfile195.csv\nfile196.csv\nfile197.csv\nfile198.csv\nfile199.csv"
    )
    assert third.messages[3]["tool_call_id"] == second.messages[3]["tool_call_id"]
    assert [c.output for c in result.calls] == [LONG, SHORT]


def test_each_request_repeats_the_one_before_it_byte_for_byte_once_shortened(
    llm_server,
):
    script(llm_server, "ls", "ls -a", "ls | wc -l", "ls | wc -l")
    run(llm_server)
    requests = llm_server.requests
    assert len(requests) == 5
    for before, after in zip(requests[1:], requests[2:], strict=False):
        # Everything but the newest, still whole, result is sent again unchanged.
        kept = before.messages[:-1]
        assert json.dumps(after.messages[: len(kept)]) == json.dumps(kept)
    assert all(r.messages[:2] == TASK for r in requests)
    last = contents(requests[-1])
    assert [last[3][:33], last[5][:36]] == [
        "[earlier result of shell ls: exit",
        "[earlier result of shell ls -a: exit",
    ]
    assert last[7] == last[9] == SHORT


def test_short_results_stay_whole_and_other_loops_keep_every_result(llm_server):
    script(llm_server, "ls | wc -l", "ls", "ls | wc -l")
    run(llm_server)
    last = contents(llm_server.requests[-1])
    assert last[3] == SHORT and last[5].startswith("[earlier result of shell ls:")
    script(llm_server, "ls", "ls | wc -l")
    run(llm_server, shorten_used=False)
    assert contents(llm_server.requests[-1])[3] == LONG


def test_a_result_told_as_text_after_a_protocol_prompt_is_shortened_in_place(
    llm_server,
):
    llm_server.reply("R3", tool_calls=[("shell", {"command": "ls"})])
    # The endpoint then writes its call as text: a protocol prompt goes in.
    llm_server.reply(
        "R3", json.dumps({"name": "shell", "arguments": {"command": "ls -a"}})
    )
    llm_server.reply(
        "R3", json.dumps({"name": "shell", "arguments": {"command": "ls | wc -l"}})
    )
    llm_server.reply("R3", FINAL)
    run(llm_server)
    third, fourth = llm_server.requests[2:]
    assert third.messages[0] == TASK[0] and third.messages[1]["role"] == "system"
    assert third.messages[4]["role"] == "tool"
    assert contents(third)[4].startswith("[earlier result of shell ls: exit 0")
    assert contents(third)[-1] == "Tool shell result:\n" + LONG
    assert contents(fourth)[6].startswith(
        "Tool shell result:\n[earlier result of shell ls -a: exit 0"
    )
    assert json.dumps(fourth.messages[:6]) == json.dumps(third.messages[:6])


def test_a_loop_paused_on_the_operator_resumes_with_the_results_to_shorten(
    llm_server,
):
    script(llm_server, "ls", "rm old.csv")
    paused = []

    def waits_once(name, args):
        if args["command"] == "rm old.csv" and not paused:
            paused.append(True)
            raise ToolPaused({"tool": name})
        return SHORT if paused else LONG

    with client_for("R3", llm_server.env()) as llm:
        with pytest.raises(ToolPaused) as stop:
            run_tool_loop(llm, TASK, [SHELL], waits_once, shorten_used=True)
        state = json.loads(json.dumps(stop.value.state["loop"]))
        result = run_tool_loop(
            llm, [], [SHELL], waits_once, resume=state, shorten_used=True
        )
    assert result.final_content == FINAL
    last = contents(llm_server.requests[-1])
    assert last[3].startswith("[earlier result of shell ls: exit 0, 200 lines")
    assert last[5] == SHORT
