"""Message contracts of artoo: pydantic models with the spec's JSON field names.

Every model validates on construction; invalid data raises a
``pydantic.ValidationError`` that names the offending field.

Callers import every contract from here; this module holds the registry
``CONTRACTS`` of message types and the payload readers. The models live in
``roles.task_contracts`` (R1 to GGS), ``roles.memory_contracts``,
``roles.audit_contracts``, ``roles.criteria`` (criteria and their checks) and
``roles.contract_base`` (the base model and the shared vocabulary).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from roles.audit_contracts import (
    AuditEvent,
    AuditQuery,
    AuditReport,
    ConvergenceHealth,
    Period,
    RoleHealth,
    ToolHealth,
)
from roles.contract_base import Action, Anomaly, Contract, Control, MacroState
from roles.criteria import (
    CHECK_TYPES,
    Criterion,
    CriterionSpec,
    criterion_fields,
    describe_check,
    normalise_criterion,
)
from roles.memory_contracts import Megram, MemoryQuery, MemoryRecall, Potentials
from roles.projects.events import PROJECT_MESSAGES
from roles.task_contracts import (
    ApprovalDecision,
    ApprovalRequest,
    ClarificationAnswer,
    ClarificationRequest,
    Constraints,
    CorrectionSignal,
    CriterionVerdict,
    DirectResponse,
    DispatchManifest,
    ExecutionResult,
    FinalResult,
    GapPoint,
    Loss,
    NextMoves,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
)

__all__ = [
    "Action",
    "Anomaly",
    "ApprovalDecision",
    "ApprovalRequest",
    "AuditEvent",
    "AuditQuery",
    "AuditReport",
    "CHECK_TYPES",
    "CONTRACTS",
    "ClarificationAnswer",
    "ClarificationRequest",
    "Constraints",
    "Contract",
    "Control",
    "ConvergenceHealth",
    "CorrectionSignal",
    "Criterion",
    "CriterionSpec",
    "CriterionVerdict",
    "DirectResponse",
    "DispatchManifest",
    "ExecutionResult",
    "FinalResult",
    "GapPoint",
    "Loss",
    "MacroState",
    "Megram",
    "MemoryQuery",
    "MemoryRecall",
    "NextMoves",
    "OutcomeSummary",
    "Period",
    "PlanDirective",
    "Potentials",
    "ReplanRequest",
    "RoleHealth",
    "SubTask",
    "SubTaskOutcome",
    "TaskSpec",
    "ToolHealth",
    "criterion_fields",
    "describe_check",
    "normalise_criterion",
    "parse_payload",
    "read_payload",
]

CONTRACTS: dict[str, type[Contract]] = {
    model.__name__: model
    for model in (
        TaskSpec,
        ClarificationRequest,
        ClarificationAnswer,
        DirectResponse,
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
        *PROJECT_MESSAGES,
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
