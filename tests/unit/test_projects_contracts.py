"""Project messages: over-long texts are cut, missing or contradictory ones refused."""

import pytest
from pydantic import ValidationError

from roles.projects.config import ProjectConfig
from roles.projects.contracts import (
    AssessorVerdict,
    DoneEntry,
    EscalationEvent,
    QAVerdict,
    Scope,
    TaskPlan,
    clip,
    read,
)


def words(n: int) -> str:
    return " ".join(f"word{i}" for i in range(n))


def test_clip_keeps_a_short_text_and_cuts_a_long_one_at_a_word():
    assert clip("  fits  ", 10) == "fits"
    cut = clip(words(100), 50)
    assert len(cut) <= 50 and cut.endswith("…")
    assert cut[:-1].split()[-1].startswith("word")
    assert words(100).startswith(cut[:-1])


def test_a_long_remit_and_milestones_are_cut_to_the_spec_sizes():
    scope = Scope(
        remit=words(400),
        milestones=[{"description": words(100), "areas": [words(40), "ui"]}],
    )
    assert len(scope.remit) <= 1000 and scope.remit.endswith("…")
    assert len(scope.milestones[0].description) <= 200
    assert len(scope.milestones[0].areas[0]) <= 100
    assert scope.milestones[0].areas[1] == "ui"


def test_a_milestone_may_be_given_as_its_description():
    scope = Scope(remit="r", milestones=["User can create colonies"])
    assert scope.milestones[0].description == "User can create colonies"
    assert scope.milestones[0].areas == []


def test_a_scope_without_milestones_or_remit_is_refused():
    with pytest.raises(ValidationError, match="milestones"):
        Scope(remit="r", milestones=[])
    with pytest.raises(ValidationError, match="remit\n.*must not be empty"):
        Scope(remit="   ", milestones=["m"])


def test_read_applies_the_given_configs_sizes():
    config = ProjectConfig(remit_chars=20)
    scope = read(Scope, {"remit": words(10), "milestones": ["m"]}, config)
    assert len(scope.remit) <= 20
    assert len(read(Scope, {"remit": words(10), "milestones": ["m"]}).remit) > 20


def test_carry_forward_items_are_rough_and_capped_nearest_first():
    plan = TaskPlan(
        action="skip",
        task_description="nothing to do",
        carry_forward=["a", "", words(50), "c", "d", "e", "f", "g"],
    )
    assert plan.carry_forward == ["a", clip(words(50), 100), "c", "d", "e"]
    assert len(plan.carry_forward[1]) <= 100


@pytest.mark.parametrize(
    ("data", "missing"),
    [
        ({"action": "implement", "task_description": "x"}, "implementation_plan"),
        ({"action": "implement", "implementation_plan": "PRP"}, "task_description"),
        ({"action": "skip"}, "task_description"),
        ({"action": "abort"}, "escalation_context"),
    ],
)
def test_a_plan_missing_what_its_action_needs_is_refused(data, missing):
    with pytest.raises(ValidationError, match=f"needs {missing}"):
        TaskPlan(**data)


def test_an_unknown_planner_action_is_refused():
    with pytest.raises(ValidationError, match="action"):
        TaskPlan(action="deploy")


def test_a_done_entry_keeps_its_summary_within_300_chars():
    entry = DoneEntry(
        task_id="t1", description="Colony model", result_summary=words(80)
    )
    assert len(entry.result_summary) <= 300
    with pytest.raises(ValidationError, match="description"):
        DoneEntry(task_id="t1", description="")


def test_a_failing_qa_verdict_needs_feedback_and_feedback_is_capped():
    with pytest.raises(ValidationError, match="needs feedback"):
        QAVerdict(passed=False)
    assert len(QAVerdict(passed=False, feedback=words(200)).feedback) <= 500
    assert QAVerdict(passed=True).feedback == ""


def test_drift_needs_a_hint_and_divergence_an_analysis():
    with pytest.raises(ValidationError, match="minor_drift needs a correction_hint"):
        AssessorVerdict(verdict="minor_drift")
    with pytest.raises(ValidationError, match="major_divergence needs"):
        AssessorVerdict(verdict="major_divergence")
    hint = AssessorVerdict(verdict="minor_drift", correction_hint=words(60))
    assert len(hint.correction_hint) <= 200
    with pytest.raises(ValidationError, match="verdict"):
        AssessorVerdict(verdict="fine")


def test_an_escalation_names_the_tier_of_its_trigger():
    event = EscalationEvent(tier=2, trigger="abort", milestone_index=0)
    assert event.task_id is None
    with pytest.raises(ValidationError, match="'qa_failed' is tier 1, not 3"):
        EscalationEvent(tier=3, trigger="qa_failed", milestone_index=0)
