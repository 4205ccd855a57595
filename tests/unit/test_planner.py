"""R2 offline: planning, the plan validator's word matching, next moves."""

from __future__ import annotations

import itertools
from datetime import date

from roles.contracts import (
    Criterion,
    FinalResult,
    Loss,
    PlanDirective,
    SubTaskOutcome,
    TaskSpec,
)
from roles.llm.offline import OfflineModel
from roles.llm.offline_roles import NO_ALTERNATIVE
from roles.planner import next_moves, plan
from roles.planning.blocked_paths import names_tool

TODAY = date(2025, 3, 14)


def ids():
    counter = itertools.count(1)
    return lambda: f"id-{next(counter)}"


def spec(text):
    return TaskSpec(task_id="offline_task", intent=text.strip(), raw_input=text)


def directive(tools=(), targets=(), name="refine"):
    return PlanDirective(
        task_id="offline_task",
        loss=Loss(D=1.0, P=0.2, Omega=0.2, L=0.7),
        prev_directive="init",
        directive=name,
        blocked_tools=list(tools),
        blocked_targets=list(targets),
        failure_class="environmental",
        budget_pressure=0.2,
        grad_l=0.0,
    )


def outcome(subtask_id, intent, status="matched", output=None, reason=None):
    return SubTaskOutcome(
        subtask_id=subtask_id,
        parent_task_id="offline_task",
        intent=intent,
        status=status,
        output=output,
        failure_reason=reason,
    )


def offline_plan(text, **kwargs):
    return plan(
        spec(text), model=OfflineModel(), today=TODAY, id_factory=ids(), **kwargs
    )


def final():
    return FinalResult(
        task_id="offline_task",
        summary="abandoned after 3 rounds",
        loss=Loss(D=1.0, P=0.5, Omega=0.9, L=1.0),
        prev_directive="refine",
        directive="abandon",
    )


def test_each_line_is_one_subtask_with_an_exit_status_check():
    result = offline_plan("mkdir -p out\n\nls out\n")
    assert result.error == ""
    assert [s.intent for s in result.subtasks] == ["mkdir -p out", "ls out"]
    assert [s.context for s in result.subtasks] == [
        "command: mkdir -p out",
        "command: ls out",
    ]
    assert [s.sequence for s in result.subtasks] == [1, 2]
    assert [s.subtask_id for s in result.subtasks] == ["id-1", "id-2"]
    assert {s.parent_task_id for s in result.subtasks} == {"offline_task"}
    assert result.subtasks[0].success_criteria == [
        Criterion(criterion="exit status 0", check={"type": "exit_code", "value": 0})
    ]
    assert result.task_criteria == []
    assert result.usage is None


def test_expect_comment_adds_an_output_match_check_and_stays_in_the_intent():
    result = offline_plan("date +%Y  # expect: ^20[0-9]{2}$")
    sub = result.subtasks[0]
    assert sub.intent == "date +%Y  # expect: ^20[0-9]{2}$"
    assert sub.success_criteria[1] == Criterion(
        criterion="output matches ^20[0-9]{2}$",
        check={"type": "output_matches", "pattern": "^20[0-9]{2}$"},
    )


def test_ampersand_line_runs_with_the_previous_line():
    result = offline_plan("echo a\n& echo b\necho c\n& echo d\n& echo e")
    assert [(s.intent, s.sequence) for s in result.subtasks] == [
        ("echo a", 1),
        ("echo b", 1),
        ("echo c", 2),
        ("echo d", 2),
        ("echo e", 2),
    ]


def test_invalid_expect_regex_is_a_clear_plan_error():
    result = offline_plan("ls  # expect: [unclosed")
    assert result.subtasks == []
    assert "invalid regex" in result.error and "[unclosed" in result.error


def test_replan_runs_only_the_failed_lines_again():
    text = "echo a\necho b\n& curl http://x\necho d"
    previous = [
        outcome("1", "echo a"),
        outcome("2", "echo b", status="failed"),
        outcome("3", "curl http://x", status="failed"),
        outcome("4", "echo d"),
    ]
    result = offline_plan(text, directive=directive(), previous_outcomes=previous)
    assert [(s.intent, s.sequence) for s in result.subtasks] == [
        ("echo b", 1),
        ("curl http://x", 1),
    ]


def test_replan_with_shell_blocked_has_no_alternative():
    previous = [outcome("1", "false", status="failed")]
    result = offline_plan(
        "false", directive=directive(tools=["shell"]), previous_outcomes=previous
    )
    assert result.subtasks == []
    assert result.error.startswith(NO_ALTERNATIVE)
    assert "shell" in result.error


def test_replan_with_every_failed_line_blocked_has_no_alternative():
    previous = [
        outcome("1", "ls /missing", status="failed"),
        outcome("2", "cat /nope  # expect: x", status="failed"),
    ]
    result = offline_plan(
        "ls /missing\ncat /nope  # expect: x",
        directive=directive(targets=["ls /missing", "cat /nope"]),
        previous_outcomes=previous,
    )
    assert result.error.startswith(NO_ALTERNATIVE)
    assert "ls /missing" in result.error


def test_replan_with_the_program_of_every_failed_line_blocked_has_none():
    previous = [outcome("1", "cd /srv && grep -c x log", status="failed")]
    result = offline_plan(
        "cd /srv && grep -c x log",
        directive=directive(tools=["shell:grep", "shell:ls"]),
        previous_outcomes=previous,
    )
    assert result.error.startswith(NO_ALTERNATIVE)
    assert "cd /srv && grep -c x log" in result.error


def test_replan_keeps_failed_lines_when_only_some_are_blocked():
    previous = [
        outcome("1", "ls /missing", status="failed"),
        outcome("2", "ping -c1 host", status="failed"),
    ]
    result = offline_plan(
        "ls /missing\nping -c1 host",
        directive=directive(targets=["ls /missing"]),
        previous_outcomes=previous,
    )
    assert [s.intent for s in result.subtasks] == ["ls /missing", "ping -c1 host"]


def test_truncated_target_blocks_the_command_it_starts():
    long = "echo " + "x" * 200
    previous = [outcome("1", long, status="failed")]
    result = offline_plan(
        long,
        directive=directive(targets=[long[:120] + "…"]),
        previous_outcomes=previous,
    )
    assert result.error.startswith(NO_ALTERNATIVE)


def test_offline_next_moves_come_from_the_template():
    outcomes = [
        outcome("a", "echo ok", output="ok"),
        outcome("b", "ls /missing", status="failed", reason="no such file"),
    ]
    moves, usage = next_moves(spec("x"), final(), outcomes, model=OfflineModel())
    assert usage is None
    assert 2 <= len(moves.next_moves) <= 3
    assert moves.next_moves[0].startswith("Run 'ls /missing' yourself")
    assert not any("no such file" in move for move in moves.next_moves)
    assert moves.accomplished.startswith("Completed 1 of 2 subtasks")
    assert "echo ok → ok" in moves.accomplished


def test_blocked_tool_is_named_only_as_a_whole_word():
    assert names_tool("Use GLOB to list files", ["glob"]) == "glob"
    assert names_tool("run shellcheck on read_file_v2", ["shell", "read_file"]) == ""
    assert names_tool("call read_file on a.txt", ["shell", "read_file"]) == "read_file"


def test_offline_plan_pauses_once():
    slept: list[float] = []
    model = OfflineModel(latency_ms=5, sleep=slept.append)
    plan(spec("ls"), model=model, today=TODAY, id_factory=ids())
    assert slept == [0.005]
