"""R4a Agent-Validator: per-criterion verdicts on one attempt and the fast-loop call.

Machine checks (``roles.claims.checks``) run in code first; the model judges only the
criteria left, each on its own, and the aggregation is code: every criterion
passes → matched; otherwise retry with a CorrectionSignal while the budget (2
attempts in total) lasts, else failed. No retry after an executor ``failed``
status, an infrastructure error, a scoring error, a Law 1 denial or a model
verdict of ``failed``. Failing verdicts whose evidence or tool calls show an
environmental cause (missing file, permission, network, ``[LAW1]`` …) are
promoted to ``environmental``; nothing is ever demoted.

The per-criterion judging is in ``roles.agent_validator_judge``, the prompt
and the reply model in ``roles.agent_validator_prompts``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from roles.agent_validator_judge import (
    NO_EVIDENCE,
    Judged,
    fail_all,
    judge,
    unsupported,
)
from roles.agent_validator_prompts import ValidatorReply
from roles.claims.answer_rules import subtask_effect
from roles.claims.deletions import subtask_deletions
from roles.claims.facts import output_text
from roles.claims.question import Question, question_for
from roles.contracts import (
    CorrectionSignal,
    Criterion,
    CriterionVerdict,
    ExecutionResult,
    GapPoint,
    SubTask,
    SubTaskOutcome,
    normalise_criterion,
)
from roles.cookbook import nudge, nudges
from roles.criteria import CHECK_TYPES, DONE
from roles.llm.client import Usage
from roles.recoverable import namesakes, transient_failure
from roles.task_contracts import INFRASTRUCTURE

__all__ = [
    "NO_EVIDENCE",
    "NO_EVIDENCE_TODO",
    "Validation",
    "ValidatorReply",
    "failed_outcome",
    "gap_point",
    "subtask_criteria",
    "unsupported",
    "validate",
]

NO_EVIDENCE_TODO = (
    "Call a tool (shell, read_file, glob …) whose output shows the answer and "
    "report what it returned; an answer that no tool result shows is never accepted."
)
ENVIRONMENTAL = re.compile(
    r"(permission denied|no such file|not found|not exist|connection refused|"
    r"timed? ?out|network error|network is unreachable|could not resolve|"
    r"couldn't connect|name resolution|command not found|\[LAW1\])",
    re.IGNORECASE,
)


@dataclass
class Validation:
    """R4a's judgement of one attempt: the signal for R3 or the final outcome."""

    verdict: Literal["matched", "retry", "failed"]
    verdicts: list[CriterionVerdict]
    gap: GapPoint
    correction: CorrectionSignal | None
    outcome: SubTaskOutcome | None
    usage: Usage | None


def validate(
    subtask: SubTask,
    result: ExecutionResult,
    *,
    model: Any,
    attempt: int,
    trajectory: list[GapPoint],
    workspace: Path,
    max_attempts: int = 2,
    infrastructure_error: str = "",
    today: date | None = None,
    inherited: Sequence[str] = (),
    request: str = "",
    question: Question | None = None,
) -> Validation:
    """Judge one ExecutionResult against the subtask's criteria.

    ``inherited`` are the tool calls of the matched subtasks whose outputs this
    one was given: a claim built only on them is evidenced by them. ``request``
    is the user's request (a total it asks for must be computed by a tool),
    ``question`` what it asks for as R1 stated it (None: read from its words).
    """
    if attempt < 1 or max_attempts < 1:
        raise ValueError(
            f"attempt and max_attempts must be ≥ 1 ({attempt}, {max_attempts})"
        )
    criteria = subtask_criteria(subtask)
    if infrastructure_error:
        judged = fail_all(criteria, f"{INFRASTRUCTURE} error: {infrastructure_error}")
    else:
        judged = judge(
            subtask,
            result,
            criteria,
            model,
            Path(workspace),
            today,
            inherited,
            request,
            question,
        )
    verdicts = [_promote(v, result) for v in judged.verdicts]
    # After the operator's denial the file stays, and no retry asks again.
    denied = any("[LAW1]" in call for call in result.tool_calls)
    if not (infrastructure_error or denied):
        asked = question_for(question, request)
        verdicts = [
            *subtask_deletions(subtask.intent, request),
            *subtask_effect(subtask, result, asked),
            *verdicts,
        ]
    gap = gap_point(attempt, verdicts)
    history = [*trajectory, gap]
    failing = [v for v in verdicts if v.verdict == "fail"]
    if not failing and not judged.stop:
        outcome = outcome_of(subtask, result, "matched", None, history, verdicts)
        return Validation("matched", verdicts, gap, None, outcome, judged.usage)
    stop = _stop_reason(result, judged, bool(infrastructure_error))
    # An executor that reports failure fails even when every check passed.
    if not failing:
        outcome = outcome_of(subtask, result, "failed", stop, history, verdicts)
        return Validation("failed", verdicts, gap, None, outcome, judged.usage)
    first = failing[0]
    wrong, todo = _explain(first, judged.reply)
    rerun = None if infrastructure_error or denied else _rerun(first, result)
    if rerun:
        stop, (first, wrong, todo) = "", rerun
    if stop or attempt >= max_attempts:
        reason = stop or f"max attempts ({max_attempts}) reached; last issue: {wrong}"
        outcome = outcome_of(subtask, result, "failed", reason, history, verdicts)
        return Validation("failed", verdicts, gap, None, outcome, judged.usage)
    if first.failure_class != "environmental" and nudges(model):
        asked = question_for(question, request)
        ways = nudge(asked.answer, result.tool_calls, asked.count_of)
        todo = f"{todo} {ways}".strip()
    correction = CorrectionSignal(
        subtask_id=subtask.subtask_id,
        attempt_number=attempt,
        failed_criterion=first.criterion,
        failure_class=first.failure_class,
        what_was_wrong=wrong,
        what_to_do=todo,
    )
    return Validation("retry", verdicts, gap, correction, None, judged.usage)


def subtask_criteria(subtask: SubTask) -> list[Criterion]:
    """Return the subtask's criteria; none means one: the intent is done.

    A criterion that is only a check's name ("output_matches", no check) asserts
    nothing, as small models write it beside the real ones: it is left out.
    """
    criteria = [normalise_criterion(c) for c in subtask.success_criteria]
    criteria = [c for c in criteria if not is_bare_check_name(c)]
    return criteria or [Criterion(criterion=f"{DONE}{subtask.intent}")]


def is_bare_check_name(criterion: Criterion) -> bool:
    """Return True when the criterion is a check type's name without a check."""
    return criterion.check is None and criterion.criterion.strip() in CHECK_TYPES


def gap_point(attempt: int, verdicts: list[CriterionVerdict]) -> GapPoint:
    """Return the trajectory point of an attempt: score, unmet criteria, class."""
    failed = [v for v in verdicts if v.verdict == "fail"]
    classes = {v.failure_class or "logical" for v in failed}
    aggregate = "" if not classes else classes.pop() if len(classes) == 1 else "mixed"
    score = (len(verdicts) - len(failed)) / len(verdicts) if verdicts else 0.0
    return GapPoint(
        attempt=attempt,
        score=round(score, 4),
        unmet_criteria=[v.criterion for v in failed],
        failure_class=aggregate,
    )


def failed_outcome(
    subtask: SubTask,
    reason: str,
    *,
    attempt: int,
    trajectory: list[GapPoint],
    result: ExecutionResult | None = None,
) -> tuple[SubTaskOutcome, GapPoint]:
    """Return a failed outcome for an attempt that could not be judged."""
    verdicts = fail_all(subtask_criteria(subtask), reason).verdicts
    gap = gap_point(attempt, verdicts)
    result = result or ExecutionResult(
        subtask_id=subtask.subtask_id, status="failed", output=reason
    )
    outcome = outcome_of(
        subtask, result, "failed", reason, [*trajectory, gap], verdicts
    )
    return outcome, gap


def _promote(verdict: CriterionVerdict, result: ExecutionResult) -> CriterionVerdict:
    if verdict.verdict == "pass" or verdict.failure_class == "environmental":
        return verdict
    seen = [verdict.evidence, *result.tool_calls]
    if ENVIRONMENTAL.search("\n".join(seen)) or "[LAW1]" in output_text(result.output):
        return verdict.model_copy(update={"failure_class": "environmental"})
    return verdict


def _stop_reason(result: ExecutionResult, judged: Judged, infrastructure: bool) -> str:
    """Return why no retry may follow (Law 1 named first), or ""."""
    if infrastructure:
        return judged.stop
    # Only a tool result says Law 1 denied something; the claim may echo it.
    for text in result.tool_calls:
        at = text.find("[LAW1]")
        if at != -1:
            return f"Law 1: {text[at:].splitlines()[0]}"
    if judged.stop:
        return judged.stop
    if judged.reply is not None and judged.reply.verdict == "failed":
        return judged.reply.failure_reason or "the validator judged it infeasible"
    return ""


def _rerun(
    first: CriterionVerdict, result: ExecutionResult
) -> tuple[CriterionVerdict, str, str] | None:
    """Return the correction that takes the way forward a failure names
    (``roles.recoverable``): rerun a command that failed for a temporary
    reason, read the file a missing one's error names; else None."""
    command, said = transient_failure(result.tool_calls)
    path, named = namesakes(result.tool_calls)
    environmental = first.model_copy(update={"failure_class": "environmental"})
    if command:
        wrong = f"`{command}` failed for a temporary reason: {said}"
        return environmental, wrong, f"Run the same command again: {command}"
    if path:
        wrong = f"there is no file {path}, but the error names {named}"
        return environmental, wrong, f"Read the file it names instead: {named}"
    return None


def _explain(first: CriterionVerdict, reply: ValidatorReply | None) -> tuple[str, str]:
    if NO_EVIDENCE in first.evidence:
        return first.evidence, NO_EVIDENCE_TODO
    wrong = (reply.what_was_wrong if reply else "") or (
        f"criterion {first.criterion!r} failed: {first.evidence}"
    )
    todo = (reply.what_to_do if reply else "") or (
        f"Use a different approach so that this holds: {first.criterion}"
        + (
            " (the cause looks environmental: check the path, target or source)"
            if first.failure_class == "environmental"
            else ""
        )
    )
    return wrong, todo


def outcome_of(subtask, result, status, reason, history, verdicts) -> SubTaskOutcome:
    """Return R4a's final word on ``subtask``: its status, reason and verdicts."""
    return SubTaskOutcome(
        subtask_id=subtask.subtask_id,
        parent_task_id=subtask.parent_task_id,
        intent=subtask.intent,
        success_criteria=list(subtask.success_criteria),
        status=status,
        output=result.output,
        failure_reason=reason,
        gap_trajectory=history,
        criteria_verdicts=verdicts,
        tool_calls=list(result.tool_calls),
    )
