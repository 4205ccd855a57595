"""A run's typed state: the fan-in's release, completion and deadline rules."""

from datetime import UTC, datetime, timedelta

from roles.contracts import SubTask, SubTaskOutcome
from roles.runstate import DEADLINE_REASON, FanIn, RunState

NOW = datetime(2026, 11, 23, 16, 0, tzinfo=UTC)


def subtask(sid: str, sequence: int) -> SubTask:
    return SubTask(subtask_id=sid, parent_task_id="t", intent=sid, sequence=sequence)


def outcome(sid: str, status: str = "matched", output="ok") -> SubTaskOutcome:
    return SubTaskOutcome(
        subtask_id=sid, parent_task_id="t", intent=sid, status=status, output=output
    )


def three_groups() -> FanIn:
    return FanIn.for_plan(
        1, [subtask("a", 1), subtask("b", 1), subtask("c", 2), subtask("d", 3)], NOW
    )


def test_a_new_round_releases_its_first_group_only():
    fan = three_groups()
    assert fan.order == [1, 2, 3] and fan.released == 1
    assert fan.is_released(1) and not fan.is_released(2)
    assert fan.groups == {1: ["a", "b"], 2: ["c"], 3: ["d"]}


def test_a_later_group_is_held_until_the_earlier_one_is_complete():
    fan = three_groups()
    assert fan.hold(2, 17) and fan.hold(3, 18)
    assert fan.hold(2, 17)
    assert fan.held == {2: [17], 3: [18]}
    assert fan.record(outcome("a")) == []
    assert fan.record(outcome("b")) == [17]
    assert fan.released == 2 and not fan.hold(2, 19)
    assert fan.record(outcome("c")) == [18]
    assert fan.released == 3 and fan.held == {}


def test_a_failed_outcome_also_completes_its_group():
    fan = three_groups()
    fan.hold(2, 5)
    fan.record(outcome("a", "failed"))
    assert fan.record(outcome("b", "failed")) == [5]


def test_the_round_is_complete_when_every_subtask_has_an_outcome():
    fan = three_groups()
    for sid in "abc":
        fan.record(outcome(sid))
    assert not fan.is_complete() and fan.missing() == ["d"]
    fan.record(outcome("d"))
    assert fan.is_complete() and fan.missing() == []


def test_the_evaluation_is_claimed_once():
    fan = three_groups()
    assert fan.claim_evaluation() is True
    assert fan.claim_evaluation() is False


def test_at_the_deadline_missing_outcomes_fail_as_infrastructure():
    fan = three_groups()
    fan.record(outcome("a"))
    fan.fail_missing("t")
    assert fan.is_complete()
    assert [o.subtask_id for o in fan.ordered_outcomes()] == ["a", "b", "c", "d"]
    assert fan.outcomes["d"].status == "failed"
    assert fan.outcomes["d"].failure_reason == DEADLINE_REASON


def test_overdue_counts_from_the_dispatch():
    fan = three_groups()
    assert not fan.is_overdue(NOW + timedelta(seconds=299), 300)
    assert fan.is_overdue(NOW + timedelta(seconds=301), 300)


def test_only_matched_outputs_are_passed_to_later_groups():
    fan = three_groups()
    fan.record(outcome("a", output="42 lines"))
    fan.record(outcome("b", "failed", output="nothing"))
    assert fan.matched_outputs() == "- a: 42 lines"


def test_only_matched_evidence_is_inherited_by_later_groups():
    fan = three_groups()
    fan.record(outcome("a").model_copy(update={"tool_calls": ["shell: {} → 42"]}))
    fan.record(outcome("b", "failed").model_copy(update={"tool_calls": ["x"]}))
    assert fan.matched_evidence() == ["shell: {} → 42"]


def test_an_empty_plan_has_nothing_to_release():
    fan = FanIn.for_plan(2, [], NOW)
    assert fan.released == 0 and fan.is_complete()
    assert fan.release() == []


def test_planning_is_claimed_once_per_round_but_a_claimant_may_resume():
    state = RunState()
    assert state.claim_planning(1, 41)
    assert not state.claim_planning(1, "timeout")
    assert state.claim_planning(1, 41)
    assert state.claim_planning(2, "timeout")


def test_state_round_trips_through_json_as_stored():
    state = RunState(question="which dir?", fanin=three_groups())
    state.fanin.hold(2, 9)
    state.fanin.record(outcome("a"))
    stored = state.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    again = RunState.model_validate(stored)
    assert again == state
    assert stored["fanin"]["groups"] == {"1": ["a", "b"], "2": ["c"], "3": ["d"]}


def test_a_stale_round_has_no_fanin():
    state = RunState(fanin=three_groups())
    assert state.fanin_of(1) is state.fanin
    assert state.fanin_of(2) is None
