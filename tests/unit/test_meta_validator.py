"""R4b's code paths: the fan-in gate, the offline verdict and the abandon rule."""

from __future__ import annotations

import pytest

from roles.answered import ANSWERED
from roles.contracts import DispatchManifest, GapPoint, SubTaskOutcome, TaskSpec
from roles.meta_validator import evaluate
from roles.offline import OfflineModel
from roles.offline_roles import NO_ALTERNATIVE


def outcome(subtask_id, intent, status="matched", output=None, reason=None):
    return SubTaskOutcome(
        subtask_id=subtask_id,
        parent_task_id="offline_task",
        intent=intent,
        status=status,
        output=output,
        failure_reason=reason,
    )


def manifest(ids_=("a", "b"), reason=""):
    return DispatchManifest(
        task_id="offline_task", subtask_ids=list(ids_), reason=reason
    )


def test_offline_meta_validator_accepts_and_joins_outputs():
    outcomes = [outcome("a", "echo a", output="a"), outcome("b", "echo b", output="b")]
    result = evaluate(
        manifest(), outcomes, model=OfflineModel(), elapsed_ms=12, replans_so_far=0
    )
    assert type(result.message).__name__ == "OutcomeSummary"
    assert result.message.merged_output == "a\nb"
    assert result.message.elapsed_ms == 12
    assert result.usage is None


def test_failed_outcome_is_a_replan_with_reasons_and_correction_count():
    failed = outcome("b", "false", status="failed", reason="exit status 1")
    failed.gap_trajectory = [GapPoint(attempt=1), GapPoint(attempt=2)]
    outcomes = [outcome("a", "true"), failed]
    result = evaluate(
        manifest(), outcomes, model=OfflineModel(), elapsed_ms=5, replans_so_far=0
    )
    request = result.message
    assert type(request).__name__ == "ReplanRequest"
    assert request.gap_summary == "exit status 1"
    assert request.failed_subtasks == ["b"]
    assert request.correction_count == 2
    assert request.recommendation == "replan"
    assert [o.subtask_id for o in request.outcomes] == ["a", "b"]


def test_third_replan_request_recommends_abandon():
    outcomes = [outcome("a", "false", status="failed")]
    second = evaluate(
        manifest(["a"]), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=1
    )
    third = evaluate(
        manifest(["a"]), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=2
    )
    assert second.message.recommendation == "replan"
    assert third.message.recommendation == "abandon"
    assert third.message.gap_summary == "a"


def test_empty_manifest_is_an_abandon_with_its_reason():
    result = evaluate(
        manifest([], reason="the offline model cannot find an alternative: x"),
        [],
        model=OfflineModel(),
        elapsed_ms=0,
        replans_so_far=0,
    )
    assert result.message.recommendation == "abandon"
    assert result.message.gap_summary.startswith(NO_ALTERNATIVE)


def test_negative_elapsed_time_is_a_clear_error():
    with pytest.raises(ValueError, match="elapsed_ms"):
        evaluate(manifest(), [], model=OfflineModel(), elapsed_ms=-1, replans_so_far=0)


def asked(question: str) -> DispatchManifest:
    spec = TaskSpec(task_id="offline_task", intent="answer", raw_input=question)
    return DispatchManifest(task_id="offline_task", subtask_ids=["a"], task_spec=spec)


TOTAL = "What is the total of the amount column in /srv/payments.csv?"


@pytest.mark.parametrize(
    "said",
    [
        "The 'amount' column is the third column.",
        {"matches": True, "content": "The file was read successfully."},
        None,
    ],
)
def test_a_question_for_a_number_that_no_output_answers_is_replanned(said):
    outcomes = [outcome("a", "sum the amounts", output=said)]
    result = evaluate(
        asked(TOTAL), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=0
    )
    request = result.message
    assert type(request).__name__ == "ReplanRequest"
    [verdict] = request.task_criteria_verdicts
    assert verdict.criterion == ANSWERED and verdict.verdict == "fail"
    assert "no subtask's output states a number" in request.gap_summary


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (TOTAL, "The total is 13467."),
        ("How many entries have the level ERROR?", "21"),
        ("Write a script that prints the total of a.csv", "wrote total.py"),
        ("Print the weekday of 2025-01-01", "Wednesday"),
    ],
)
def test_an_answer_with_a_number_or_a_request_for_no_number_is_not_held(question, said):
    result = evaluate(
        asked(question),
        [outcome("a", "do it", output=said)],
        model=OfflineModel(),
        elapsed_ms=0,
        replans_so_far=0,
    )
    assert type(result.message).__name__ == "OutcomeSummary"
