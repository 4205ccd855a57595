"""A count by wc -l of a file whose last line has no newline is one short."""

from __future__ import annotations

import pytest

from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import invented_facts
from roles.claims.unterminated import uncounted_last_line
from roles.contracts import ExecutionResult, SubTask


def counted(command: str, count: int) -> str:
    return format_evidence("shell", {"command": command}, f"[exit code 0]\n{count}")


@pytest.mark.parametrize(
    "command", ["wc -l {f}", "cat {f} | wc -l", "wc -l < {f}", "wc -l '{f}'"]
)
def test_a_wc_count_of_a_file_without_a_final_newline_is_one_short(tmp_path, command):
    guests = tmp_path / "guests.txt"
    guests.write_text("Ann 1\nBob 2\nCy 3")  # no newline after the last one
    call = counted(command.format(f=guests), 2)
    said = uncounted_last_line(["2"], [call])
    assert "the last line of" in said and "so the file has 3 lines" in said
    assert f"grep -c '' {guests}" in said


def test_a_wc_count_that_is_right_is_left_alone(tmp_path):
    ended, empty = tmp_path / "ended.txt", tmp_path / "empty.txt"
    ended.write_text("Ann 1\nBob 2\n")
    empty.write_text("")
    assert uncounted_last_line(["2"], [counted(f"wc -l {ended}", 2)]) == ""
    assert uncounted_last_line(["0"], [counted(f"wc -l {empty}", 0)]) == ""
    # Another number than wc printed, a relative path, a command that is more.
    short = tmp_path / "short.txt"
    short.write_text("a\nb")
    assert uncounted_last_line(["7"], [counted(f"wc -l {short}", 1)]) == ""
    assert uncounted_last_line(["1"], [counted("wc -l short.txt", 1)]) == ""
    assert uncounted_last_line(["1"], [counted(f"grep -c b {short}", 1)]) == ""


def test_r4a_refuses_the_short_count_and_names_the_command(tmp_path):
    # A real retry run of the control bench answered 56 for a list of 57
    # guests (wc -l) and was accepted.
    guests = tmp_path / "guests.txt"
    guests.write_text("\n".join(f"Guest {n}" for n in range(1, 58)))
    request = f"How many guests does {guests} list? It has one guest per line."
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent="Count the guests")
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="56",
        tool_calls=[counted(f"wc -l {guests}", 56)],
    )
    said = invented_facts(subtask, result, request)
    assert said.startswith(f"the claimed 56 was printed by `wc -l {guests}`")
    assert "so the file has 57 lines" in said
