"""R4a's verdict once more: a matched attempt judged with its second derivation.

``roles.claims.rederive`` derives a claimed answer again by other means; its
verdict joins the attempt's here, which may turn a match into a retry (the
correction names both results) or, on the last attempt, a failure.
"""

from __future__ import annotations

from roles.agent_validator import Validation, gap_point, outcome_of
from roles.contracts import (
    CorrectionSignal,
    CriterionVerdict,
    ExecutionResult,
    GapPoint,
    SubTask,
)

__all__ = ["REDERIVED_TODO", "with_verdict"]

REDERIVED_TODO = (
    "Run the command that computes exactly what the request asks (its "
    "condition, its files), check its output, and answer with what it printed."
)


def with_verdict(
    validation: Validation,
    verdict: CriterionVerdict,
    subtask: SubTask,
    result: ExecutionResult,
    *,
    attempt: int,
    trajectory: list[GapPoint],
    max_attempts: int = 2,
) -> Validation:
    """Return a matched ``validation`` judged once more with ``verdict`` (a
    second derivation's): still matched when it passes, else a retry with
    its evidence as the correction while attempts remain, else failed."""
    verdicts = [*validation.verdicts, verdict]
    gap = gap_point(attempt, verdicts)
    history = [*trajectory, gap]
    if verdict.verdict == "pass":
        outcome = outcome_of(subtask, result, "matched", None, history, verdicts)
        return Validation("matched", verdicts, gap, None, outcome, validation.usage)
    if attempt >= max_attempts:
        reason = f"max attempts ({max_attempts}) reached; last issue: "
        outcome = outcome_of(
            subtask, result, "failed", reason + verdict.evidence, history, verdicts
        )
        return Validation("failed", verdicts, gap, None, outcome, validation.usage)
    correction = CorrectionSignal(
        subtask_id=subtask.subtask_id,
        attempt_number=attempt,
        failed_criterion=verdict.criterion,
        failure_class=verdict.failure_class or "logical",
        what_was_wrong=verdict.evidence,
        what_to_do=REDERIVED_TODO,
    )
    return Validation("retry", verdicts, gap, correction, None, validation.usage)
