"""R4a Agent-Validator: per-criterion verdicts on one attempt and the fast-loop call.

Machine checks (``roles.checks``) run in code first; the model judges only the
criteria left, each on its own, and the aggregation is code: every criterion
passes → matched; otherwise retry with a CorrectionSignal while the budget (2
attempts in total) lasts, else failed. No retry after an executor ``failed``
status, an infrastructure error, a scoring error, a Law 1 denial or a model
verdict of ``failed``. Failing verdicts whose evidence or tool calls show an
environmental cause (missing file, permission, network, ``[LAW1]`` …) are
promoted to ``environmental``; nothing is ever demoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from roles.checks import evaluate_check, output_text
from roles.contracts import (
    Contract,
    CorrectionSignal,
    Criterion,
    CriterionVerdict,
    ExecutionResult,
    GapPoint,
    SubTask,
    SubTaskOutcome,
    normalise_criterion,
)
from roles.evidence import parse_evidence
from roles.llm import LLMError, LLMOutputError, Usage
from roles.offline import OfflineModel
from roles.tools import head_tail

NO_EVIDENCE = "the executor's claimed output is not evidence"
NO_EVIDENCE_TODO = (
    "Call a tool (shell, read_file, glob …) whose output shows the answer and "
    "report what it returned; an answer that no tool result shows is never accepted."
)
ENVIRONMENTAL = re.compile(
    r"(permission denied|no such file|not found|not exist|connection refused|"
    r"timed? ?out|network error|command not found|\[LAW1\])",
    re.IGNORECASE,
)
QUOTE = 300


class CriterionResult(Contract):
    """The model's verdict on one criterion."""

    criterion: str = ""
    met: bool = False
    failure_class: Literal["logical", "environmental"] | None = None
    evidence: str = ""

    @field_validator("failure_class", mode="before")
    @classmethod
    def _known_class(cls, value: Any) -> Any:
        text = str(value or "").strip().lower()
        return text if text in ("logical", "environmental") else None

    @field_validator("evidence", "criterion", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class ValidatorReply(Contract):
    """What R4a asks the model to return (DESIGN §8.2)."""

    verdict: Literal["matched", "retry", "failed"] = "retry"
    criteria_results: list[CriterionResult] = []
    what_was_wrong: str = ""
    what_to_do: str = ""
    failure_reason: str = ""

    @field_validator("what_was_wrong", "what_to_do", "failure_reason", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    @field_validator("verdict", mode="before")
    @classmethod
    def _known_verdict(cls, value: Any) -> str:
        text = str(value or "").strip().lower()
        return text if text in ("matched", "retry", "failed") else "retry"


@dataclass
class Validation:
    """R4a's judgement of one attempt: the signal for R3 or the final outcome."""

    verdict: Literal["matched", "retry", "failed"]
    verdicts: list[CriterionVerdict]
    gap: GapPoint
    correction: CorrectionSignal | None
    outcome: SubTaskOutcome | None
    usage: Usage | None


@dataclass
class _Judged:
    verdicts: list[CriterionVerdict]
    usage: Usage | None = None
    reply: ValidatorReply | None = None
    stop: str = ""  # why no retry is possible, when that is known before judging


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
) -> Validation:
    """Judge one ExecutionResult against the subtask's criteria."""
    if attempt < 1 or max_attempts < 1:
        raise ValueError(
            f"attempt and max_attempts must be ≥ 1 ({attempt}, {max_attempts})"
        )
    criteria = subtask_criteria(subtask)
    if infrastructure_error:
        judged = _fail_all(criteria, f"infrastructure error: {infrastructure_error}")
    else:
        judged = _judge(subtask, result, criteria, model, Path(workspace), today)
    verdicts = [_promote(v, result) for v in judged.verdicts]
    gap = gap_point(attempt, verdicts)
    history = [*trajectory, gap]
    failing = [v for v in verdicts if v.verdict == "fail"]
    if not failing and not judged.stop:
        outcome = _outcome(subtask, result, "matched", None, history, verdicts)
        return Validation("matched", verdicts, gap, None, outcome, judged.usage)
    stop = _stop_reason(result, judged, bool(infrastructure_error))
    # An executor that reports failure fails even when every check passed.
    if not failing:
        outcome = _outcome(subtask, result, "failed", stop, history, verdicts)
        return Validation("failed", verdicts, gap, None, outcome, judged.usage)
    first = failing[0]
    wrong, todo = _explain(first, judged.reply)
    if stop or attempt >= max_attempts:
        reason = stop or f"max attempts ({max_attempts}) reached; last issue: {wrong}"
        outcome = _outcome(subtask, result, "failed", reason, history, verdicts)
        return Validation("failed", verdicts, gap, None, outcome, judged.usage)
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
    """Return the subtask's criteria; none means one: the intent is done."""
    criteria = [normalise_criterion(c) for c in subtask.success_criteria]
    return criteria or [Criterion(criterion=f"the subtask is done: {subtask.intent}")]


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
    verdicts = _fail_all(subtask_criteria(subtask), reason).verdicts
    gap = gap_point(attempt, verdicts)
    result = result or ExecutionResult(
        subtask_id=subtask.subtask_id, status="failed", output=reason
    )
    outcome = _outcome(subtask, result, "failed", reason, [*trajectory, gap], verdicts)
    return outcome, gap


def unsupported(result: ExecutionResult) -> str:
    """Return why a result has no evidence, or "" when a tool call succeeded.

    A refused, failed or denied call (``ERROR: …``, ``[LAW1] …``) is no
    evidence of anything; a shell command that exited non-zero is (it ran).
    """
    calls = [c for c in map(parse_evidence, result.tool_calls) if c is not None]
    if not calls:
        return "no tool was called"
    if all(c.output.lstrip().startswith(("ERROR:", "[LAW1]")) for c in calls):
        return "no tool call succeeded"
    return ""


def _judge(subtask, result, criteria, model, workspace, today) -> _Judged:
    known: dict[int, CriterionVerdict] = {}
    missing = unsupported(result) if result.status != "failed" else ""
    for index, criterion in enumerate(criteria):
        if missing and criterion.mode == "verifiable":
            verdict = _verdict(criterion, False, f"{missing}: {NO_EVIDENCE}")
            if missing == "no tool was called":
                verdict.failure_class = "environmental"
            known[index] = verdict
    for index, criterion in enumerate(criteria):
        if index in known:
            continue
        if criterion.check is not None:
            check = evaluate_check(criterion.check, result, workspace=workspace)
            known[index] = _verdict(criterion, check.passed, check.evidence)
    rest = [i for i in range(len(criteria)) if i not in known]
    if result.status == "failed":
        said = f"the executor reported failure: {_quote(output_text(result.output))}"
        known.update({i: _verdict(criteria[i], False, said) for i in rest})
        return _Judged(_ordered(known), stop=said)
    if rest and isinstance(model, OfflineModel):
        model.pause()
        known.update({i: _by_status(criteria[i], result.status) for i in rest})
    elif rest:
        return _ask_model(subtask, result, criteria, rest, known, model, today)
    return _Judged(_ordered(known))


def _ask_model(subtask, result, criteria, rest, known, model, today) -> _Judged:
    checked = [(criteria[i].criterion, known[i]) for i in sorted(known)]
    asked = [criteria[i].criterion for i in rest]
    messages = build_messages(subtask, result, asked, checked, today)
    try:
        reply, usage = model.complete_json(messages, ValidatorReply)
    except LLMError as err:
        reason = f"scoring error: {err}"
        usage = err.usage if isinstance(err, LLMOutputError) else None
        for index in rest:
            known[index] = _verdict(criteria[index], False, reason)
            known[index].failure_class = "environmental"
        return _Judged(_ordered(known), usage, stop=reason)
    for index, answer in zip(rest, _match_answers(asked, reply), strict=True):
        known[index] = _from_answer(criteria[index], answer)
    return _Judged(_ordered(known), usage, reply)


def _ordered(verdicts: dict[int, CriterionVerdict]) -> list[CriterionVerdict]:
    return [verdicts[i] for i in sorted(verdicts)]


def _match_answers(
    texts: list[str], reply: ValidatorReply
) -> list[CriterionResult | None]:
    """Pair each criterion with the model's result: by text, else by position."""
    results = reply.criteria_results
    by_text = {_norm(r.criterion): r for r in results if r.criterion}
    paired = []
    for position, text in enumerate(texts):
        answer = by_text.get(_norm(text))
        if answer is None and len(results) == len(texts):
            answer = results[position]
        paired.append(answer)
    return paired


def _from_answer(
    criterion: Criterion, answer: CriterionResult | None
) -> CriterionVerdict:
    if answer is None:
        return _verdict(criterion, False, "the validator gave no verdict for it")
    evidence = answer.evidence or (
        "met" if answer.met else "not met; no evidence given"
    )
    verdict = _verdict(criterion, answer.met, evidence)
    if not answer.met:
        verdict.failure_class = answer.failure_class or "logical"
    return verdict


def _by_status(criterion: Criterion, status: str) -> CriterionVerdict:
    passed = status == "completed"
    return _verdict(
        criterion,
        passed,
        f"no machine check: {'passes' if passed else 'fails'} because the executor "
        f"status is {status}",
    )


def _verdict(criterion: Criterion, passed: bool, evidence: str) -> CriterionVerdict:
    return CriterionVerdict(
        criterion=criterion.criterion,
        mode=criterion.mode,
        verdict="pass" if passed else "fail",
        failure_class=None if passed else "logical",
        evidence=evidence,
    )


def _fail_all(criteria: list[Criterion], reason: str) -> _Judged:
    verdicts = [_verdict(c, False, reason) for c in criteria]
    for verdict in verdicts:
        verdict.failure_class = "environmental"
    return _Judged(verdicts, stop=reason)


def _promote(verdict: CriterionVerdict, result: ExecutionResult) -> CriterionVerdict:
    if verdict.verdict == "pass" or verdict.failure_class == "environmental":
        return verdict
    seen = [verdict.evidence, *result.tool_calls]
    if ENVIRONMENTAL.search("\n".join(seen)) or "[LAW1]" in output_text(result.output):
        return verdict.model_copy(update={"failure_class": "environmental"})
    return verdict


def _stop_reason(result: ExecutionResult, judged: _Judged, infrastructure: bool) -> str:
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


def _outcome(subtask, result, status, reason, history, verdicts) -> SubTaskOutcome:
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


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _quote(text: str) -> str:
    return head_tail(text.strip(), QUOTE)


SYSTEM_PROMPT = """You are R4a, the Agent-Validator of artoo. You judge one \
attempt of one subtask against its success criteria, each criterion on its own.

Rules:
- tool_calls are the ground truth (each entry: tool: {args} → first 200 chars of \
its output); output is the executor's claim. A criterion is met only when the \
evidence positively shows it; vague claims, missing evidence or an interrupted, \
failed or truncated primary action mean not met. When in doubt: not met.
- A later ls/find/stat does not prove that a failed primary action succeeded.
- Never judge the overall result: one verdict per listed criterion, nothing else.
- failure_class for an unmet criterion: "environmental" when the cause is outside \
the executor's approach (missing file or path, permission denied, network error, \
timeout, command not found, a [LAW1] denial); otherwise "logical".
- verdict: "matched" if every criterion is met; "retry" if a different approach \
could meet the unmet ones; "failed" if it cannot be done (say why in \
failure_reason).
- what_was_wrong: one sentence on the first unmet criterion. what_to_do: one \
concrete change that would meet it.

Reply with only this JSON object:
{"verdict": "matched|retry|failed", "criteria_results": [{"criterion": "<the \
criterion text>", "met": true|false, "failure_class": "logical|environmental|null", \
"evidence": "<quote from the tool calls or output>"}], "what_was_wrong": "", \
"what_to_do": "", "failure_reason": ""}"""


def build_messages(
    subtask: SubTask,
    result: ExecutionResult,
    asked: list[str],
    checked: list[tuple[str, CriterionVerdict]],
    today: date | None,
) -> list[dict[str, str]]:
    """Return the validator's chat messages for the criteria left to judge."""
    parts = [f"Today's date: {today.isoformat()}"] if today else []
    parts.append(f"SubTask intent: {subtask.intent}")
    if subtask.context:
        parts.append(f"SubTask context: {subtask.context}")
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(asked, start=1))
    parts.append(f"Criteria to judge (exactly these, in this order):\n{numbered}")
    if checked:
        lines = "\n".join(f"- {c}: {v.verdict} ({v.evidence})" for c, v in checked)
        parts.append(f"Already checked in code (do not judge again):\n{lines}")
    parts.append(f"ExecutionResult:\n{_describe(result)}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _describe(result: ExecutionResult) -> str:
    data = result.model_dump()
    if isinstance(data.get("output"), str):
        data["output"] = head_tail(data["output"], 8000)
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)
