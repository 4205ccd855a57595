"""GGS blocks the inputs that failed, not every input of a failing subtask."""

from __future__ import annotations

import pytest

from roles.claims.evidence import format_evidence
from roles.contracts import CriterionVerdict, ReplanRequest, SubTaskOutcome
from roles.ggs.solver import GGSState, step
from roles.tools import Toolbox, ToolboxConfig, ToolError


def shell(command: str, output: str) -> str:
    return format_evidence("shell", {"command": command}, output)


def failed(sid: str, calls, klass: str = "environmental") -> SubTaskOutcome:
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        status="failed",
        criteria_verdicts=[
            CriterionVerdict(
                criterion=f"{sid} works", verdict="fail", failure_class=klass
            )
        ],
        tool_calls=list(calls),
    )


def matched(sid: str) -> SubTaskOutcome:
    return SubTaskOutcome(subtask_id=sid, parent_task_id="t", status="matched")


def replan(*outcomes: SubTaskOutcome) -> ReplanRequest:
    return ReplanRequest(task_id="t", outcomes=list(outcomes))


def rounds(*messages: ReplanRequest):
    state, results = GGSState(), []
    for message in messages:
        results.append(step(state, message))
        state = results[-1].state
    return results


LISTED = shell("ls /data", "[exit code 0]\nreport.csv")
MISSING = shell("cat /data/b.csv", "[exit code 1]\ncat: /data/b.csv: No such file")


def test_the_successful_ls_of_a_failing_subtask_stays_usable_next_round(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    first = Toolbox(tmp_path)
    first.call("shell", {"command": "ls"})
    first.call("shell", {"command": "cat missing.txt"})

    directive = step(GGSState(), replan(failed("a", first.evidence))).output

    assert directive.directive == "change_path"
    assert directive.blocked_targets == ["cat missing.txt"]
    second = Toolbox(tmp_path, ToolboxConfig(blocked_targets=directive.blocked_targets))
    assert "notes.txt" in second.call("shell", {"command": "ls"})
    with pytest.raises(ToolError, match="blocked by GGS: command 'cat missing.txt'"):
        second.call("shell", {"command": "cat missing.txt"})


def test_only_the_failed_call_of_a_failing_subtask_is_blocked():
    out = step(GGSState(), replan(failed("a", [LISTED, MISSING]))).output

    assert out.blocked_targets == ["cat /data/b.csv"]


def test_a_zero_exit_code_is_success_whatever_the_output_says():
    counted = shell("grep -c error app.log", "[exit code 0]\nerror: 3 lines")

    out = step(GGSState(), replan(failed("a", [counted, MISSING]))).output

    assert out.blocked_targets == ["cat /data/b.csv"]


def test_errors_refusals_and_denials_are_failed_inputs():
    entries = [
        format_evidence("read_file", {"path": "a.md"}, "ERROR: no such file a.md"),
        shell("rm -rf build", "[LAW1] rm deletes files — denied by the operator"),
        shell("ls /b", "ERROR: blocked by GGS: command 'ls /b' failed earlier"),
        format_evidence(
            "fetch_url",
            {"url": "http://x"},
            "ERROR: fetch failed for http://x: network error: connection refused",
        ),
        format_evidence("read_file", {"path": "b.md"}, "# Notes\nall fine"),
    ]

    out = step(GGSState(), replan(failed("a", entries))).output
    assert out.blocked_targets == ["a.md", "rm -rf build", "ls /b", "http://x"]


def test_failed_targets_accumulate_across_rounds_and_successful_ones_never_do():
    head = shell("head /data/c.csv", "[exit code 1]\nhead: /data/c.csv: No such file")

    first, second = rounds(
        replan(failed("a", [LISTED, MISSING])),
        replan(failed("a", [LISTED, head])),
    )

    assert second.output.directive == "change_path"
    assert second.output.blocked_targets == ["cat /data/b.csv", "head /data/c.csv"]
    assert second.state.tried_targets == ["cat /data/b.csv", "head /data/c.csv"]


def test_refine_while_improving_blocks_only_this_round_s_failed_targets():
    head = shell("head /data/c.csv", "[exit code 1]\nhead: /data/c.csv: No such file")

    first, second = rounds(
        replan(failed("a", [LISTED, MISSING])),  # L 0.68
        replan(failed("a", [LISTED, head]), matched("b")),  # L 0.46
    )

    out = second.output
    assert out.directive == "refine" and out.grad_l < 0
    assert out.blocked_targets == ["head /data/c.csv"]


def test_change_approach_while_improving_keeps_a_tool_whose_call_succeeded():
    calls = [
        format_evidence("read_file", {"path": "a.md"}, "ERROR: no such file a.md"),
        shell("grep -c error app.log", "[exit code 0]\nerror: 3 lines"),
    ]

    first, second = rounds(
        replan(failed("a", calls, "logical")),  # L 0.92
        replan(failed("a", calls, "logical"), matched("b")),  # L 0.68
    )

    out = second.output
    assert out.directive == "change_approach" and out.grad_l < 0
    assert out.blocked_tools == ["read_file"]


def test_running_a_file_the_subtask_wrote_is_not_blocked_when_the_file_is_wrong():
    wrote = format_evidence(
        "write_file", {"path": "/w/hello.py", "content": "hello"}, "wrote 5 bytes"
    )
    redirect = shell("echo hello > /w/run.sh", "[exit code 0]\n")
    ran = shell("python /w/hello.py", "[exit code 1]\nNameError: name 'hello'")
    ran_sh = shell("bash /w/run.sh", "[exit code 127]\nhello: command not found")
    other = shell("python /w/other.py", "[exit code 2]\nNo such file or directory")
    outcome = failed("s1", [wrote, redirect, ran, ran_sh, other])
    out = step(GGSState(), replan(outcome)).output
    assert out.blocked_targets == ["python /w/other.py"]


def test_running_a_file_the_subtask_created_or_edited_is_not_blocked():
    made = format_evidence(
        "create_file", {"path": "/w/a.py", "content": "x"}, "wrote 1 bytes"
    )
    edit = format_evidence(
        "apply_edit", {"path": "/w/b.py", "old": "x", "new": "y"}, "replaced 1"
    )
    ran_a = shell("python /w/a.py", "[exit code 1]\nNameError: name 'x'")
    ran_b = shell("python /w/b.py", "[exit code 1]\nNameError: name 'y'")
    outcome = failed("s1", [made, edit, ran_a, ran_b])
    assert step(GGSState(), replan(outcome)).output.blocked_targets == []


def test_a_silenced_fetch_that_printed_nothing_is_a_failed_input():
    # unreachable-url: "curl -s URL | awk … | head" exited 0 with nothing
    # printed in every round, and change_path blocked nothing.
    piped = "curl -s http://127.0.0.1:9/prices.csv | awk -F, '{print $2}' | head -1"
    hint = "[the pipeline printed nothing, and its exit code is its last program's]"
    fetched = shell(piped, f"[exit code 0]\n{hint}")
    printed = shell(piped.replace("prices", "sizes"), "[exit code 0]\n18.5")
    quiet = shell("grep -c x /data/a.txt | head -1", "[exit code 0]\n")

    out = step(GGSState(), replan(failed("a", [fetched, printed, quiet]))).output

    assert out.blocked_targets == [piped]


def test_an_answer_no_second_derivation_confirmed_keeps_the_tools_that_printed_it():
    # A real round: `grep -o bash passwd | wc -l` printed the right 7, the second
    # derivation found nothing, and a logical failure used to block grep and wc.
    from roles.agent_validator import gap_point
    from roles.claims.rederive import Derivation, agreement
    from roles.contracts import ExecutionResult

    counted = shell("grep -o bash /d/passwd | wc -l", "[exit code 0]\n7")
    first = Derivation("number", "7", "grep -o bash /d/passwd | wc -l", ("shell:grep",))
    verdict = agreement(
        first, ExecutionResult(subtask_id="s1", status="failed"), strict=True
    )
    outcome = SubTaskOutcome(
        subtask_id="s1", parent_task_id="t", status="failed",
        criteria_verdicts=[verdict], tool_calls=[counted],
        gap_trajectory=[gap_point(1, [verdict])],
    )  # fmt: skip
    [result] = rounds(replan(outcome))
    directive = result.output
    assert directive.directive in ("change_path", "refine")
    assert directive.blocked_tools == [] and directive.blocked_targets == []


def test_an_edit_whose_old_text_was_not_found_blocks_that_edit_not_the_file(tmp_path):
    (tmp_path / "app.py").write_text("def main():\n    return 1\n")
    first = Toolbox(tmp_path)
    with pytest.raises(ToolError):
        first.call("apply_edit", {"path": "app.py", "old": "return 2", "new": "x"})

    directive = step(GGSState(), replan(failed("a", first.evidence))).output

    assert directive.blocked_targets == ["apply_edit app.py new='x' old='return 2'"]
    config = ToolboxConfig(blocked_targets=directive.blocked_targets)
    second = Toolbox(tmp_path, config, approve=lambda ask: True)
    assert "return 1" in second.call("read_file", {"path": "app.py"})
    second.call("apply_edit", {"path": "app.py", "old": "return 1", "new": "return 3"})
    assert "return 3" in (tmp_path / "app.py").read_text()
    with pytest.raises(ToolError, match="blocked by GGS: .apply_edit app.py"):
        second.call("apply_edit", {"path": "app.py", "old": "return 2", "new": "x"})


def test_a_read_that_failed_still_blocks_its_path():
    missing = format_evidence("read_file", {"path": "gone.md"}, "ERROR: no such file")
    lines = format_evidence(
        "read_file_lines",
        {"path": "a.md", "start": 90, "end": 99},
        "ERROR: a.md has 12 lines",
    )

    out = step(GGSState(), replan(failed("a", [missing, lines]))).output

    ranged = "read_file_lines a.md end='99' start='90'"
    assert out.blocked_targets == ["gone.md", ranged]
