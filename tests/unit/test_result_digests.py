"""Earlier tool results: a digest, head and tail once the model has used them."""

from __future__ import annotations

import json

from roles.toolloop_digest import (
    WHOLE_CHARS,
    Earlier,
    is_worth_shortening,
    shorten_result,
)

LISTING = "[exit code 0]\n" + "".join(f"file{i:03}.csv\n" for i in range(200))


def conversation(*results):
    """Return a system prompt, a task and one tool message per result."""
    convo = [
        {"role": "system", "content": "You are the executor."},
        {"role": "user", "content": "Count the files."},
    ]
    for i, text in enumerate(results):
        convo.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    return convo


def test_a_long_shell_result_becomes_a_digest_then_its_head_and_tail():
    short = shorten_result("shell", {"command": "ls   -1\n*.csv"}, LISTING)
    lines = short.splitlines()
    assert lines[0] == (
        "[earlier result of shell ls -1 *.csv: exit 0, 200 lines, "
        f"{len(LISTING):,} bytes; head and tail kept]"
    )
    assert lines[1:6] == [f"file{i:03}.csv" for i in range(5)]
    assert lines[6] == "..."
    assert lines[7:] == [f"file{i:03}.csv" for i in range(195, 200)]
    assert len(short) < 400


def test_a_result_without_an_exit_code_or_line_breaks_keeps_its_two_ends():
    text = "<" + "x" * 3000 + ">"
    short = shorten_result("read_file", {"path": "a.json", "start": 1}, text)
    digest, head, dots, tail = short.split("\n")
    assert digest == (
        '[earlier result of read_file {"path": "a.json", "start": 1}: 1 line, '
        "3,002 bytes; head and tail kept]"
    )
    assert head.startswith("<x") and tail.endswith("x>") and dots == "..."
    assert len(head) == len(tail) == 300


def test_long_arguments_are_cut_in_the_digest():
    command = "awk -F, 'NR>1 {s += $3} END {print s}' " + "data.csv " * 20
    short = shorten_result("shell", {"command": command}, LISTING)
    shown = short.split(": exit 0")[0].removeprefix("[earlier result of shell ")
    assert len(shown) == 60 and shown.endswith("…")
    assert shown.startswith("awk -F, 'NR>1 {s += $3}")


def test_short_results_and_errors_are_never_shortened():
    assert not is_worth_shortening("x" * WHOLE_CHARS)
    assert is_worth_shortening("x" * (WHOLE_CHARS + 1))
    assert not is_worth_shortening("ERROR: " + "x" * 3000, error=True)


def test_a_result_is_shortened_two_turns_after_its_call_and_only_then():
    convo = conversation(LISTING)
    earlier = Earlier()
    earlier.note(2, 1, "shell", {"command": "ls"}, "")
    earlier.settle(convo, 2)
    assert convo[2]["content"] == LISTING
    earlier.settle(convo, 3)
    assert convo[2]["content"].startswith("[earlier result of shell ls: exit 0")
    assert convo[2]["tool_call_id"] == "c0" and convo[2]["role"] == "tool"
    assert earlier.entries == []


def test_a_shortened_result_never_changes_again_and_the_prompts_stay_the_same():
    convo = conversation(LISTING)
    earlier = Earlier()
    earlier.note(2, 1, "shell", {"command": "ls"}, "")
    system = json.dumps(convo[:2])
    earlier.settle(convo, 3)
    first = json.dumps(convo)
    convo += conversation(LISTING)[2:]
    earlier.note(3, 2, "shell", {"command": "ls"}, "")
    earlier.settle(convo, 4)
    assert json.dumps(convo).startswith(first[:-1])
    assert json.dumps(convo[:2]) == system
    earlier.settle(convo, 5)
    assert json.dumps(convo[:3]) == first


def test_a_result_told_as_text_keeps_its_lead():
    lead = "Tool shell result:\n"
    convo = [{"role": "user", "content": lead + LISTING}]
    earlier = Earlier()
    earlier.note(0, 1, "shell", {"command": "ls"}, lead)
    earlier.settle(convo, 3)
    assert convo[0]["content"].startswith(lead + "[earlier result of shell ls: exit 0")
    assert convo[0]["content"].endswith("file199.csv")


def test_a_prompt_put_before_the_results_moves_them_and_the_state_round_trips():
    earlier = Earlier()
    earlier.note(2, 1, "shell", {"command": "ls"}, "")
    earlier.shift(1)
    again = Earlier(json.loads(json.dumps(earlier.state())))
    convo = conversation("protocol prompt", LISTING)
    again.settle(convo, 3)
    assert convo[2]["content"] == "protocol prompt"
    assert convo[3]["content"].startswith("[earlier result of shell ls")
