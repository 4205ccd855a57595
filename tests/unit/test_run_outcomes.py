"""What a run did across rounds: RunState remembers it, GGS reports it."""

from __future__ import annotations

from datetime import UTC, datetime

from roles.contracts import (
    CriterionVerdict,
    OutcomeSummary,
    ReplanRequest,
    SubTask,
    SubTaskOutcome,
)
from roles.ggs.solver import GGSState, step
from roles.runstate import FanIn, RunState


def outcome(sid, intent, status, output=None):
    verdicts = []
    if status == "failed":
        verdicts = [
            CriterionVerdict(
                criterion="exit status 0", verdict="fail", failure_class="environmental"
            )
        ]
    return SubTaskOutcome(
        subtask_id=sid,
        parent_task_id="t",
        intent=intent,
        status=status,
        output=output,
        criteria_verdicts=verdicts,
    )


ONE = outcome("s1", "echo one", "matched", "[exit code 0]\none\n")
TWO = outcome("s2", "echo two", "matched", "[exit code 0]\ntwo\n")
# A plausible shortfall: what δ tolerates (a failed fact is never success).
SHORT_OF_PLAUSIBLE = CriterionVerdict(
    criterion="the listing looks complete", verdict="fail", mode="plausible"
)
MISSING = outcome("s3", "ls /nope", "failed", "[exit code 2]\nls: /nope: missing")


def test_a_match_stays_completed_when_a_later_round_fails_the_same_intent():
    state = RunState()
    state.keep_outcomes([ONE, MISSING])
    state.keep_outcomes(
        [outcome("s4", "echo one", "failed"), outcome("s5", "ls /nope", "failed")]
    )

    kept = state.outcomes_so_far()

    assert [(o.subtask_id, o.status) for o in kept] == [
        ("s1", "matched"),
        ("s5", "failed"),
    ]


def test_the_current_round_s_outcomes_count_before_ggs_keeps_them():
    state = RunState()
    state.keep_outcomes([ONE, MISSING])
    now = datetime(2026, 1, 1, tzinfo=UTC)
    retry = SubTask(subtask_id="s6", parent_task_id="t", intent="ls /nope")
    state.fanin = FanIn.for_plan(2, [retry], now)
    state.fanin.record(outcome("s6", "ls /nope", "matched", "[exit code 0]\n"))

    assert [o.subtask_id for o in state.outcomes_so_far()] == ["s1", "s6"]
    assert list(state.run_outcomes) == ["echo one", "ls /nope"]
    assert state.run_outcomes["ls /nope"].subtask_id == "s3"


def test_run_state_round_trips_its_outcomes_through_json():
    state = RunState()
    state.keep_outcomes([ONE, MISSING])

    again = RunState.model_validate_json(state.model_dump_json())

    assert again.outcomes_so_far() == [ONE, MISSING]


def test_an_abandon_reports_the_run_s_completed_work_with_its_outputs():
    empty_round = ReplanRequest(
        task_id="t", outcomes=[], recommendation="abandon", gap_summary="no plan"
    )

    out = step(
        GGSState(replans=1), empty_round, run_outcomes=[ONE, TWO, MISSING]
    ).output

    assert out.directive == "abandon"
    assert "Completed: echo one → one; echo two → two." in out.summary
    assert "Failed: ls /nope." in out.summary
    assert out.output is None


def test_a_success_delivers_the_outputs_of_earlier_rounds_too():
    last_round = ReplanRequest(
        task_id="t",
        outcomes=[
            TWO,
            *[outcome(f"m{n}", f"step {n}", "matched") for n in range(3)],
            MISSING.model_copy(update={"criteria_verdicts": [SHORT_OF_PLAUSIBLE]}),
        ],
    )
    earlier = [ONE, *last_round.outcomes]

    out = step(GGSState(replans=1), last_round, run_outcomes=earlier).output

    assert out.directive == "success"
    assert "Completed: echo one; echo two; step 0" in out.summary
    assert out.output == ["[exit code 0]\none\n", "[exit code 0]\ntwo\n"]


def test_without_the_run_s_outcomes_a_round_reports_its_own():
    message = ReplanRequest(task_id="t", outcomes=[ONE, MISSING])

    out = step(GGSState(replans=3), message).output

    assert "Completed: echo one → one." in out.summary


def test_an_accept_names_the_work_earlier_rounds_completed():
    summary = OutcomeSummary(
        task_id="t", outcomes=[TWO], summary="Both lines printed.", merged_output="two"
    )

    out = step(GGSState(replans=1), summary, run_outcomes=[ONE, MISSING, TWO]).output

    assert out.directive == "accept"
    assert out.summary == (
        "Both lines printed. Also completed in earlier rounds: echo one → one."
    )
    assert out.output == "two"
