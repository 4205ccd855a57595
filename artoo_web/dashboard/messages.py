"""One-line summaries of bus messages, for the bus timeline's rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from artoo_web.dashboard.output import output_text
from artoo_web.models import BusMessage

SUMMARY_CHARS = 160
# A message still undelivered after this long is flagged in the bus timeline;
# younger ones are normally in flight (live rows are published before delivery).
STUCK_AFTER_S = 60


def _clip(text: object, limit: int = SUMMARY_CHARS) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _loss(p: dict) -> str:
    loss = p.get("loss") or {}
    return f"L={float(loss.get('L', 0)):.3f} ∇L={float(p.get('grad_l', 0)):+.3f}"


def _recall(p: dict) -> str:
    if p.get("available") is False:
        return "memory unavailable"
    return (
        f"{p.get('action', '?')}: attention {float(p.get('attention', 0)):.2f}, "
        f"decision {float(p.get('decision', 0)):+.2f}, {len(p.get('sops', []))} SOPs,"
        f" {len(p.get('recent', []))} recent"
    )


def _report(p: dict) -> str:
    return (
        f"{p.get('trigger', '?')} report: {p.get('tasks_observed', 0)} tasks, "
        f"{len(p.get('anomalies', []))} anomalies, "
        f"{len(p.get('boundary_violations', []))} boundary violations"
    )


SUMMARIES: dict[str, Callable[[dict], str]] = {
    "TaskSpec": lambda p: f"{p.get('task_id')}: {p.get('intent')}",
    "ClarificationRequest": lambda p: f"asks: {p.get('question')}",
    "ClarificationAnswer": lambda p: p.get("answer") or "(proceed as is)",
    "MemoryQuery": lambda p: f"{p.get('space') or 'intent'} / {p.get('entity')}",
    "MemoryRecall": _recall,
    "DispatchManifest": lambda p: (
        f"{len(p.get('subtask_ids', []))} subtasks dispatched"
        if p.get("subtask_ids")
        else f"no plan: {p.get('reason') or 'no subtasks'}"
    ),
    "SubTask": lambda p: (
        f"{p.get('subtask_id')} [group {p.get('sequence', 1)}] {p.get('intent')}"
    ),
    "ExecutionResult": lambda p: (
        f"{p.get('subtask_id')} {p.get('status')}: {output_text(p.get('output'))}"
    ),
    "CorrectionSignal": lambda p: (
        f"{p.get('subtask_id')} attempt {p.get('attempt_number')}: "
        f"{p.get('what_was_wrong')} → {p.get('what_to_do')}"
    ),
    "ApprovalRequest": lambda p: (
        f"{p.get('tool')}: {p.get('command')} ({p.get('reason')})"
    ),
    "ApprovalDecision": lambda p: f"{p.get('decision')}",
    "SubTaskOutcome": lambda p: (
        f"{p.get('subtask_id')} {p.get('status')}"
        + (f": {p['failure_reason']}" if p.get("failure_reason") else "")
    ),
    "ReplanRequest": lambda p: (
        f"{len(p.get('failed_subtasks', []))} failed, recommends "
        f"{p.get('recommendation')}: {p.get('gap_summary')}"
    ),
    "OutcomeSummary": lambda p: p.get("summary") or "all subtasks matched",
    "PlanDirective": lambda p: (
        f"{p.get('prev_directive')}→{p.get('directive')} {_loss(p)}"
    ),
    "Megram": lambda p: (
        f"[{p.get('level', 'M')}] {p.get('space')} / {p.get('entity')}: "
        f"{p.get('content')}"
    ),
    "FinalResult": lambda p: f"{p.get('directive')}: {p.get('summary')}",
    "NextMoves": lambda p: "next: " + "; ".join(p.get("next_moves", [])),
    "AuditQuery": lambda p: "on-demand audit requested",
    "AuditReport": _report,
}


def summarise(type_: str, payload: object) -> str:
    """Return a one-line summary of a bus message for the timeline."""
    fn = SUMMARIES.get(type_)
    if fn is not None and isinstance(payload, dict):
        try:
            return _clip(fn(payload))
        except (TypeError, ValueError, AttributeError, KeyError):
            pass
    return _clip(json.dumps(payload, ensure_ascii=False, default=str))


def decorate(msg: BusMessage, now: datetime | None = None) -> BusMessage:
    """Attach the row's summary, and flag a message stuck before delivery."""
    msg.summary = summarise(msg.type, msg.payload)
    age = ((now or timezone.now()) - msg.created_at).total_seconds()
    msg.stuck = msg.delivered_at is None and age > STUCK_AFTER_S
    return msg
