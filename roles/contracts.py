"""Message contracts of artoo: pydantic models with the spec's JSON field names.

Every model validates on construction; invalid data raises a
``pydantic.ValidationError`` that names the offending field.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

Level = Literal["M", "K", "C", "T"]
Action = Literal["Ignore", "Exploit", "Avoid", "Caution"]


class Contract(BaseModel):
    """Base of every message: unknown keys are ignored, known ones validated."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Megram(Contract):
    """One unit of experience in MKCT memory (paper §6.2).

    ``id``, ``created_at`` and ``level`` may be left empty by a writer; the
    store fills them (uuid4, now in UTC, ``M``).
    """

    id: str = ""
    level: Level = "M"
    created_at: datetime | None = None
    space: str = Field(min_length=1)
    entity: str = Field(min_length=1)
    content: str = ""
    state: str = ""
    f: float = Field(ge=0.0, le=1.0)
    sigma: float = Field(ge=-1.0, le=1.0)
    k: float = Field(ge=0.0)


class Potentials(Contract):
    """Decay-weighted potentials of one (space, entity) pair and their action."""

    attention: float
    decision: float
    action: Action


Mode = Literal["verifiable", "plausible"]
FailureClass = Literal["logical", "environmental"]
CheckType = Literal[
    "exit_code", "output_contains", "output_matches", "file_exists", "json_field"
]
CHECK_TYPES: frozenset[str] = frozenset(CheckType.__args__)
CHECK_PARAMS: dict[str, tuple[str, ...]] = {
    "exit_code": ("value",),
    "output_contains": ("value",),
    "output_matches": ("pattern",),
    "file_exists": ("path",),
    "json_field": ("path",),
}
ActionDirective = Literal["refine", "change_path", "change_approach", "break_symmetry"]
TerminalDirective = Literal["accept", "success", "abandon"]
MacroState = Literal[
    "init",
    "refine",
    "change_path",
    "change_approach",
    "break_symmetry",
    "accept",
    "success",
    "abandon",
]
Anomaly = Literal[
    "none",
    "boundary_violation",
    "drift",
    "convergence_failure",
    "ggs_thrashing",
    "duplicate_subtask_id",
    "fanin_incomplete",
    "role_drift",
]
NonEmpty = Annotated[str, Field(min_length=1)]


class Criterion(Contract):
    """A success criterion: the assertion, how it is judged, an optional check.

    ``check`` is a machine check R4a evaluates in code, e.g.
    ``{"type": "output_contains", "value": "ok"}``.
    """

    criterion: NonEmpty
    mode: Mode = "verifiable"
    check: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _text_from_check(cls, value: Any) -> Any:
        return criterion_fields(value)

    @field_validator("check")
    @classmethod
    def _check_has_known_type(cls, check: dict[str, Any] | None):
        if check is not None and check.get("type") not in CHECK_TYPES:
            allowed = ", ".join(sorted(CHECK_TYPES))
            raise ValueError(f"check type must be one of {allowed}")
        return check


CriterionSpec = Annotated[str, Field(min_length=1)] | Criterion


def describe_check(check: Any) -> str:
    """Return the assertion a machine check states, or "" when it states none.

    ``{"type": "output_matches", "pattern": "ok$"}`` states ``output matches
    /ok$/``; a check of an unknown type or without its parameter states nothing.
    """
    if not isinstance(check, dict):
        return ""
    params = CHECK_PARAMS.get(check.get("type"))
    if params is None or any(check.get(p) is None for p in params):
        return ""
    kind = check["type"]
    if kind == "exit_code":
        return f"exit code is {_shown(check['value'])}"
    if kind == "output_contains":
        return f"output contains {_shown(check['value'])}"
    if kind == "output_matches":
        return f"output matches /{check['pattern']}/"
    if kind == "file_exists":
        return f"file {check['path']} exists"
    if "value" in check:
        return f"output field {check['path']} equals {_shown(check['value'])}"
    return f"output has the field {check['path']}"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def criterion_fields(value: Any) -> Any:
    """Return a criterion object with the text its check states, when it lacks one.

    Small models write a bare check where a criterion belongs, a check beside
    no text, or the check's keys beside the text; each check is kept as the
    model wrote it and the text is only ever what that check asserts. Anything
    else is returned unchanged for validation to judge.
    """
    if not isinstance(value, dict):
        return value
    value = _lower_mode(value)
    text = value.get("criterion")
    if isinstance(text, str) and text.strip():
        if "check" not in value and describe_check(value):
            own = {k: v for k, v in value.items() if k in ("criterion", "mode")}
            check = {k: v for k, v in value.items() if k not in own}
            return {**own, "check": check}
        return value
    if describe_check(value):
        return {"criterion": describe_check(value), "check": value}
    stated = describe_check(value.get("check"))
    return {**value, "criterion": stated} if stated else value


def _lower_mode(value: dict[str, Any]) -> dict[str, Any]:
    mode = value.get("mode")
    if not isinstance(mode, str) or mode == mode.strip().lower():
        return value
    return {**value, "mode": mode.strip().lower()}


def normalise_criterion(value: str | dict[str, Any] | Criterion) -> Criterion:
    """Return ``value`` as a Criterion; a plain string is a verifiable criterion."""
    if isinstance(value, Criterion):
        return value
    if isinstance(value, str):
        return Criterion(criterion=value)
    if isinstance(value, dict):
        return Criterion.model_validate(value)
    raise TypeError(f"criterion must be a str or a dict, not {type(value).__name__}")


class Constraints(Contract):
    """Scope and deadline of a task, both optional and kept verbatim."""

    scope: str | None = None
    deadline: str | None = None


class TaskSpec(Contract):
    """R1's faithful restatement of the user's request."""

    task_id: NonEmpty
    intent: NonEmpty
    constraints: Constraints = Field(default_factory=Constraints)
    raw_input: str


class SubTask(Contract):
    """One unit of work for an executor; ids are assigned by the runtime."""

    subtask_id: NonEmpty
    parent_task_id: NonEmpty
    intent: NonEmpty
    success_criteria: list[CriterionSpec] = Field(default_factory=list)
    context: str = ""
    deadline: str | None = None
    sequence: int = Field(default=1, ge=1)


class DispatchManifest(Contract):
    """What R2 dispatched this round; no subtasks plus a reason means no plan."""

    task_id: NonEmpty
    subtask_ids: list[str] = Field(default_factory=list)
    task_spec: TaskSpec | None = None
    dispatched_at: datetime | None = None
    task_criteria: list[CriterionSpec] = Field(default_factory=list)
    reason: str = ""


class ExecutionResult(Contract):
    """R3's result of one attempt, with its tool-call evidence entries."""

    subtask_id: NonEmpty
    status: Literal["completed", "uncertain", "failed"]
    output: Any = None
    uncertainty: str | None = None
    tool_calls: list[str] = Field(default_factory=list)


class CorrectionSignal(Contract):
    """R4a's instruction to R3 for the next attempt."""

    subtask_id: NonEmpty
    attempt_number: int = Field(ge=1)
    failed_criterion: str = ""
    failure_class: FailureClass | None = None
    what_was_wrong: str = ""
    what_to_do: str = ""


class CriterionVerdict(Contract):
    """The verdict on one criterion, with its failure class and evidence."""

    criterion: NonEmpty
    mode: Mode = "verifiable"
    verdict: Literal["pass", "fail"]
    failure_class: FailureClass | None = None
    evidence: str = ""


class GapPoint(Contract):
    """One attempt of the fast loop: its score and the criteria it left unmet."""

    attempt: int = Field(ge=1)
    score: float = 0.0
    unmet_criteria: list[str] = Field(default_factory=list)
    failure_class: Literal["", "logical", "environmental", "mixed"] = ""


class SubTaskOutcome(Contract):
    """R4a's final word on a subtask."""

    subtask_id: NonEmpty
    parent_task_id: NonEmpty
    intent: str = ""
    success_criteria: list[CriterionSpec] = Field(default_factory=list)
    status: Literal["matched", "failed"]
    output: Any = None
    failure_reason: str | None = None
    gap_trajectory: list[GapPoint] = Field(default_factory=list)
    criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)


class ReplanRequest(Contract):
    """R4b's failure signal to GGS, with the full outcomes of the round."""

    task_id: NonEmpty
    intent: str = ""
    gap_summary: str = ""
    failed_subtasks: list[str] = Field(default_factory=list)
    correction_count: int = Field(default=0, ge=0)
    elapsed_ms: int = Field(default=0, ge=0)
    outcomes: list[SubTaskOutcome] = Field(default_factory=list)
    recommendation: Literal["replan", "abandon"] = "replan"
    task_criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)


class OutcomeSummary(Contract):
    """R4b's acceptance: every subtask matched and the merged result verified."""

    task_id: NonEmpty
    intent: str = ""
    summary: str = ""
    merged_output: Any = None
    elapsed_ms: int = Field(default=0, ge=0)
    outcomes: list[SubTaskOutcome] = Field(default_factory=list)


class Loss(Contract):
    """The loss breakdown of one GGS round (keys ``D``, ``P``, ``Omega``, ``L``)."""

    D: float = Field(ge=0.0, le=1.0)
    P: float = Field(ge=0.0, le=1.0)
    Omega: float = Field(ge=0.0, le=1.0)
    L: float = Field(ge=0.0)


class PlanDirective(Contract):
    """GGS's instruction to R2 for the next planning round."""

    task_id: NonEmpty
    loss: Loss
    prev_directive: MacroState
    directive: ActionDirective
    blocked_tools: list[str] = Field(default_factory=list)
    blocked_targets: list[str] = Field(default_factory=list)
    failed_criterion: str = ""
    failure_class: Literal["logical", "environmental", "mixed"]
    budget_pressure: float = Field(ge=0.0, le=1.0)
    grad_l: float
    rationale: str = ""


class FinalResult(Contract):
    """The end of a run, emitted by GGS on every path."""

    task_id: NonEmpty
    summary: str
    output: Any = None
    loss: Loss
    grad_l: float = 0.0
    replans: int = Field(default=0, ge=0)
    prev_directive: MacroState
    directive: TerminalDirective
    rationale: str = ""


class AuditEvent(Contract):
    """The Auditor's record of one bus message."""

    event_id: str = ""
    timestamp: datetime | None = None
    run_id: str = ""
    message_id: int | None = None
    from_role: NonEmpty
    to_role: NonEmpty
    message_type: NonEmpty
    anomaly: Anomaly = "none"
    detail: str | None = None


class Period(Contract):
    """The window an AuditReport covers (JSON keys ``from`` and ``to``)."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, serialize_by_alias=True
    )

    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


class ConvergenceHealth(Contract):
    """Aggregate convergence figures of an audit window."""

    avg_correction_count: float = Field(default=0.0, ge=0.0)
    gap_trend_distribution: dict[str, int] = Field(default_factory=dict)


class ToolHealth(Contract):
    """Tool failure counters of an audit window."""

    execution_failures: int = Field(default=0, ge=0)
    environmental_retries: int = Field(default=0, ge=0)
    logical_retries: int = Field(default=0, ge=0)


class RoleHealth(Contract):
    """One role's message count and failure rate in an audit window."""

    messages: int = Field(default=0, ge=0)
    outcomes: int = Field(default=0, ge=0)
    failures: int = Field(default=0, ge=0)
    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)


class AuditReport(Contract):
    """The Auditor's window report to the human operator."""

    report_id: str = ""
    trigger: Literal["periodic", "on_demand"] = "periodic"
    period: Period = Field(default_factory=Period)
    tasks_observed: int = Field(default=0, ge=0)
    boundary_violations: list[str] = Field(default_factory=list)
    convergence_health: ConvergenceHealth = Field(default_factory=ConvergenceHealth)
    drift_alerts: list[str] = Field(default_factory=list)
    anomalies: list[str] = Field(default_factory=list)
    tool_health: ToolHealth = Field(default_factory=ToolHealth)
    role_health: dict[str, RoleHealth] = Field(default_factory=dict)
    in_reply_to: int | None = None


class AuditQuery(Contract):
    """An operator's request for an on-demand audit report (no payload)."""


class ApprovalRequest(Contract):
    """A Law 1 gated tool call waiting for the operator's decision."""

    approval_id: NonEmpty
    subtask_id: NonEmpty
    tool: NonEmpty
    command: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    reason: NonEmpty
    changes: list[dict[str, Any]] = Field(default_factory=list)


class ApprovalDecision(Contract):
    """The operator's answer to an ApprovalRequest."""

    approval_id: NonEmpty
    decision: Literal["approve", "deny"]


class ClarificationRequest(Contract):
    """R1's question when no reasonable interpretation of the input exists."""

    question: NonEmpty
    round: int = Field(default=1, ge=1)
    raw_input: str = ""


class ClarificationAnswer(Contract):
    """The user's answer; an empty answer means proceed as is."""

    answer: str = ""
    round: int = Field(default=1, ge=1)


class MemoryQuery(Contract):
    """R2's calibration query; the pair defaults to intent:<task_id>, env:local."""

    task_id: NonEmpty
    space: str = ""
    entity: str = ""
    limit: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _default_pair(self) -> MemoryQuery:
        self.space = self.space or f"intent:{self.task_id}"
        self.entity = self.entity or "env:local"
        return self


class MemoryRecall(Contract):
    """R5's answer to a MemoryQuery: SOPs, recent experience, potentials."""

    task_id: NonEmpty
    space: NonEmpty
    entity: NonEmpty
    sops: list[Megram] = Field(default_factory=list)
    recent: list[Megram] = Field(default_factory=list)
    attention: float = 0.0
    decision: float = 0.0
    action: Action = "Ignore"
    constraints: str = ""
    available: bool = True


class NextMoves(Contract):
    """R2's graceful failure after an abandon: what was done, what to try next."""

    task_id: NonEmpty
    accomplished: str = ""
    next_moves: list[NonEmpty] = Field(min_length=2, max_length=3)


CONTRACTS: dict[str, type[Contract]] = {
    model.__name__: model
    for model in (
        TaskSpec,
        ClarificationRequest,
        ClarificationAnswer,
        MemoryQuery,
        MemoryRecall,
        DispatchManifest,
        SubTask,
        ExecutionResult,
        CorrectionSignal,
        ApprovalRequest,
        ApprovalDecision,
        SubTaskOutcome,
        ReplanRequest,
        OutcomeSummary,
        PlanDirective,
        Megram,
        FinalResult,
        NextMoves,
        AuditQuery,
        AuditReport,
    )
}


def parse_payload(type_: str, payload: Any) -> Contract:
    """Validate ``payload`` as the message ``type_``; raise on an unknown type."""
    try:
        model = CONTRACTS[type_]
    except KeyError:
        raise ValueError(f"unknown message type: {type_!r}") from None
    if isinstance(payload, model):
        return payload
    return model.model_validate(payload)


def read_payload(type_: str, payload: Any) -> Contract:
    """Return a stored ``payload`` as the message ``type_``, keeping its valid fields.

    For showing history, never for acting on it: a payload that fails validation
    (written before a contract changed, or by hand) still yields a model, in
    which every missing or invalid field is its default, or None when it has
    none, so the model may break its own annotations. Validators of the whole
    model do not run on such a payload. Raise ValueError on an unknown type.
    """
    model = CONTRACTS.get(type_)
    if model is None:
        raise ValueError(f"unknown message type: {type_!r}")
    try:
        return parse_payload(type_, payload)
    except ValidationError:
        pass
    data = payload if isinstance(payload, dict) else {}
    values = {}
    for name, info in model.model_fields.items():
        key = info.alias if info.alias in data else name
        try:
            values[name] = _field_adapter(model, name).validate_python(data[key])
        except (KeyError, ValidationError):
            values[name] = (
                None
                if info.is_required()
                else info.get_default(call_default_factory=True)
            )
    return model.model_construct(**values)


@functools.cache
def _field_adapter(model: type[Contract], name: str) -> TypeAdapter:
    info = model.model_fields[name]
    if not info.metadata:
        return TypeAdapter(info.annotation)
    return TypeAdapter(Annotated[(info.annotation, *info.metadata)])
