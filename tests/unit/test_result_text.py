"""What a finished run tells its user: one headline, evidence, a reason, actions."""

from __future__ import annotations

import re

from roles.contracts import (
    CriterionVerdict,
    FinalResult,
    Loss,
    NextMoves,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
    TaskSpec,
)
from roles.ggs.solver import GGSState, forced_abandon, step
from roles.planning.prompts import template_next_moves
from roles.result_text import as_lines, is_copy, report
from roles.wording import plain

ASKED = "echo one\n& echo two\nls /definitely-missing"
# Role codes, the controller's vocabulary and its loss terms are not the user's.
INTERNAL = re.compile(
    r"\bR[1-7][ab]?\b|replan request|Law 2|[ΩθδερΔ∇]|\bD=|\bP=", re.IGNORECASE
)
# Pictographs need an emoji font; without one the page shows a box.
PICTOGRAPH = re.compile("[\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]")


def outcome(sid, intent, status="matched", output=None, reason=None):
    verdicts = []
    if status == "failed":
        verdicts = [
            CriterionVerdict(
                criterion=f"{intent} exits 0",
                verdict="fail",
                failure_class="environmental",
            )
        ]
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        intent=intent,
        status=status,
        output=output,
        failure_reason=reason,
        criteria_verdicts=verdicts,
    )


ONE = outcome("s1", "echo one", output="[exit code 0]\none\n")
TWO = outcome("s2", "echo two", output="[exit code 0]\ntwo\n")
MISSING = outcome(
    "s3",
    "ls /definitely-missing",
    "failed",
    output="[exit code 2]\nls: cannot access '/definitely-missing'",
    reason="ls: cannot access '/definitely-missing': No such file or directory",
)
OUTCOMES = [ONE, TWO, MISSING]


def abandoned(**replan) -> FinalResult:
    """Return the FinalResult GGS writes when R4b recommends abandon."""
    message = ReplanRequest(
        task_id="t",
        outcomes=OUTCOMES,
        recommendation="abandon",
        gap_summary=MISSING.failure_reason,
        **replan,
    )
    return step(GGSState(replans=1), message, run_outcomes=OUTCOMES).output


def spoken(result) -> list[str]:
    """Return every text the user reads of a report."""
    steps = [*result.completed, *result.not_completed]
    return [
        result.headline,
        result.reason,
        *result.next_moves,
        *(s.what for s in steps),
        *(s.evidence for s in steps),
    ]


def test_an_abandon_reads_as_what_was_asked_what_came_of_it_and_why():
    final = abandoned()
    moves = NextMoves(
        task_id="t",
        accomplished="Completed 2 of 3 subtasks",
        next_moves=[
            # What a model wrote once: the summary again, as a "move".
            f"Check why the run stopped: {final.summary}",
            "Create /definitely-missing or pick a directory that exists.",
        ],
    )

    result = report(ASKED, "abandon", final, OUTCOMES, moves)

    assert result.headline == (
        "“echo one; & echo two; ls /definitely-missing”: not done, "
        "2 of 3 steps completed."
    )
    assert not result.finished
    assert [(s.what, s.evidence) for s in result.completed] == [
        ("echo one", "one"),
        ("echo two", "two"),
    ]
    assert [s.what for s in result.not_completed] == ["ls /definitely-missing"]
    assert "No such file or directory" in result.not_completed[0].evidence
    assert result.reason == (
        "The checks still failed after 2 new plans, and another plan was judged "
        "unlikely to help."
    )
    assert result.next_moves == (
        "Create /definitely-missing or pick a directory that exists.",
    )


def test_headline_reason_and_next_moves_never_repeat_each_other():
    final = abandoned()
    moves = template_next_moves(
        TaskSpec(task_id="t", intent="echo", raw_input=ASKED), final, OUTCOMES
    )

    result = report(ASKED, "abandon", final, OUTCOMES, moves)

    texts = [result.headline, result.reason, final.summary]
    assert len(result.next_moves) >= 2
    for move in result.next_moves:
        assert not is_copy(move, texts), move
    assert not is_copy(result.reason, [result.headline])
    assert result.headline not in result.reason


def test_the_user_reads_no_role_code_loss_term_or_pictograph():
    finals = [
        abandoned(),
        step(
            GGSState(l_prev=0.1, worsening_count=1),
            ReplanRequest(task_id="t", outcomes=[MISSING, MISSING.model_copy()]),
        ).output,
        step(
            GGSState(replans=9), ReplanRequest(task_id="t", outcomes=[MISSING])
        ).output,
        forced_abandon(GGSState(), "t", "Abandoned.", "handler error"),
    ]
    for final in finals:
        moves = NextMoves(task_id="t", next_moves=["R2 should replan", "retry ✅"])
        result = report(ASKED, final.directive, final, OUTCOMES, moves)
        for text in spoken(result):
            assert not INTERNAL.search(text), text
            assert not PICTOGRAPH.search(text), text


def test_an_abandon_says_why_it_stopped_in_plain_words():
    law2 = step(
        GGSState(l_prev=0.1, worsening_count=1),
        ReplanRequest(task_id="t", outcomes=[MISSING]),
    ).output
    budget = step(
        GGSState(replans=9), ReplanRequest(task_id="t", outcomes=[MISSING])
    ).output
    no_plan = step(
        GGSState(),
        ReplanRequest(
            task_id="t",
            recommendation="abandon",
            gap_summary="R2 could not make a valid plan: no subtasks",
        ),
    ).output

    assert law2.reason.startswith("The last 2 attempts each came out worse")
    assert budget.reason.startswith("It used up its budget of time and attempts")
    assert no_plan.reason.endswith(
        "Still missing: the planner could not make a valid plan: no subtasks"
    )


def test_completed_steps_show_their_output_unless_it_is_the_result_itself():
    accept = step(
        GGSState(),
        OutcomeSummary(
            task_id="t",
            summary="One printed.",
            merged_output="[exit code 0]\none\n",
            outcomes=[ONE],
        ),
        run_outcomes=[ONE],
    ).output

    result = report("echo one", "accept", accept, [ONE])

    assert result.finished
    assert result.headline == "“echo one”: done, 1 step completed and checked."
    assert result.answer == "One printed."
    assert [(s.what, s.evidence) for s in result.completed] == [("echo one", "")]
    assert result.reason == "" and result.next_moves == ()


def test_a_cancelled_run_says_so_and_waits_for_no_next_moves():
    final = forced_abandon(
        GGSState(),
        "t",
        "Cancelled by the operator before the run finished.",
        "cancelled",
        reason="You cancelled the run before it finished.",
    )

    result = report("sleep 60", "abandon", final, [], None, cancelled=True)

    assert result.headline == "“sleep 60”: cancelled, nothing was completed."
    assert result.reason == "You cancelled the run before it finished."
    assert not result.moves_pending and result.next_moves == ()


def test_an_abandon_without_moves_yet_says_they_are_coming():
    result = report(ASKED, "abandon", abandoned(), OUTCOMES, None)

    assert result.moves_pending and result.next_moves == ()


def test_a_record_written_before_reasons_gets_a_plain_one():
    old = FinalResult(
        task_id="t",
        summary="❌ Task abandoned: R4b recommended abandon after 2 replan request(s).",
        loss=Loss(D=1, P=0.5, Omega=0.9, L=0.9),
        prev_directive="refine",
        directive="abandon",
        rationale="R4b recommended abandon after 2 replan request(s). [D=1.00]",
    )

    result = report("ls", "abandon", old)

    assert result.reason == "It stopped before the task was done."


def test_a_direct_answer_is_answered_directly():
    final = FinalResult.model_construct(summary="Hi there", output="Hi there")

    result = report("hi", "direct", final)

    assert result.headline == "“hi”: answered directly."
    assert result.finished and result.reason == ""


def test_plain_names_role_codes_and_drops_pictographs():
    assert plain("❌ R4b could not verify; R2 replans ✅") == (
        "the result checker could not verify; the planner replans"
    )


def test_the_cli_prints_the_same_report_line_by_line():
    result = report(ASKED, "abandon", abandoned(), OUTCOMES, None)

    lines = as_lines(result)

    assert lines[0] == result.headline
    assert "  - echo one: one" in lines
    assert f"Why it stopped: {result.reason}" in lines
