"""One-line summaries of bus messages, for the bus timeline's rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.utils import timezone

from artoo_web.dashboard.output import output_text
from artoo_web.models import BusMessage
from roles.contracts import AuditReport, MemoryRecall, PlanDirective, read_payload

SUMMARY_CHARS = 160
# A message still undelivered after this long is flagged in the bus timeline;
# younger ones are normally in flight (live rows are published before delivery).
STUCK_AFTER_S = 60
# The run page shows this many of the newest messages; older ones load a page
# at a time on request, so a long run's page costs what a short one's does.
BUS_PAGE = 200
# The lanes, the GGS timeline and the loss chart show this many of the newest
# rounds in full; older rounds fold into one line per part, for the same reason.
ROUNDS_SHOWN = 10


def _clip(text: object, limit: int = SUMMARY_CHARS) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _loss(p: PlanDirective) -> str:
    return f"L={p.loss.L:.3f} ∇L={p.grad_l:+.3f}"


def _recall(p: MemoryRecall) -> str:
    if not p.available:
        return "memory unavailable"
    return (
        f"{p.action}: attention {p.attention:.2f}, decision {p.decision:+.2f}, "
        f"{len(p.sops)} SOPs, {len(p.recent)} recent"
    )


def _report(p: AuditReport) -> str:
    return (
        f"{p.trigger} report: {p.tasks_observed} tasks, {len(p.anomalies)} anomalies,"
        f" {len(p.boundary_violations)} boundary violations"
    )


# A project's messages: a task's Run shows its RunReply, the CLI and the
# timeline the rest.
PROJECT_SUMMARIES: dict[str, Callable[[Any], str]] = {
    "AskScopeAgent": lambda p: f"scope: {p.user_request}",
    "ScopeReply": lambda p: f"{len(p.scope.milestones)} milestones: {p.scope.remit}",
    "AskTaskPlanner": lambda p: f"plan: {p.view.milestone.description}",
    "PlanReply": lambda p: f"{p.plan.action}: {p.plan.task_description}",
    "DispatchTask": lambda p: f"{p.request_id}: {p.description}",
    "StopTask": lambda p: f"stop {p.request_id}",
    "RunReply": lambda p: (
        f"{p.request_id} {'ran' if p.result.success else 'gave up'}: "
        f"{', '.join(p.result.files) or 'no files'}"
    ),
    "AskQA": lambda p: f"check {p.task_id}: {', '.join(p.result.files)}",
    "QAReply": lambda p: (
        "passed" if p.verdict.passed else f"failed: {p.verdict.feedback}"
    ),
    "AskAssessor": lambda p: f"{p.view.trigger}: {p.view.milestone.description}",
    "AssessorReply": lambda p: p.verdict.verdict,
    "VerifyMilestone": lambda p: f"verify: {'; '.join(p.commands)}",
    "VerifyReply": lambda p: ", ".join(
        f"exit {r.exit_code}" if r.exit_code is not None else "not run"
        for r in p.results
    ),
    "RecordVerification": lambda p: (
        f"{'verified' if p.passed else 'not done'}: {p.reason}"
    ),
    "Cancel": lambda p: "cancel the project",
    "RecordDone": lambda p: f"{p.entry.task_id} done: {p.entry.description}",
    "RecordEscalation": lambda p: (
        f"tier {p.event.tier} {p.event.trigger}: {p.event.detail}"
    ),
    "ResetTask": lambda p: f"{p.request_id} discarded: {p.reason}",
    "FinishProject": lambda p: f"{p.status}: {p.reason}",
}

# Each takes the payload read through its contract (``read_payload``).
SUMMARIES: dict[str, Callable[[Any], str]] = {
    "TaskSpec": lambda p: f"{p.task_id}: {p.intent}",
    "ClarificationRequest": lambda p: f"asks: {p.question}",
    "ClarificationAnswer": lambda p: p.answer or "(proceed as is)",
    "DirectResponse": lambda p: f"answers: {p.answer}",
    "MemoryQuery": lambda p: f"{p.space or 'intent'} / {p.entity}",
    "MemoryRecall": _recall,
    "DispatchManifest": lambda p: (
        f"{len(p.subtask_ids)} subtasks dispatched"
        if p.subtask_ids
        else f"no plan: {p.reason or 'no subtasks'}"
    ),
    "SubTask": lambda p: f"{p.subtask_id} [group {p.sequence}] {p.intent}",
    "ExecutionResult": lambda p: f"{p.subtask_id} {p.status}: {output_text(p.output)}",
    "CorrectionSignal": lambda p: (
        f"{p.subtask_id} attempt {p.attempt_number}: "
        f"{p.what_was_wrong} → {p.what_to_do}"
    ),
    "ApprovalRequest": lambda p: f"{p.tool}: {p.command} ({p.reason})",
    "ApprovalDecision": lambda p: f"{p.decision}",
    "SubTaskOutcome": lambda p: (
        f"{p.subtask_id} {p.status}"
        + (f": {p.failure_reason}" if p.failure_reason else "")
    ),
    "ReplanRequest": lambda p: (
        f"{len(p.failed_subtasks)} failed, recommends "
        f"{p.recommendation}: {p.gap_summary}"
    ),
    "OutcomeSummary": lambda p: p.summary or "all subtasks matched",
    "PlanDirective": lambda p: f"{p.prev_directive}→{p.directive} {_loss(p)}",
    "Megram": lambda p: f"[{p.level}] {p.space} / {p.entity}: {p.content}",
    "FinalResult": lambda p: f"{p.directive}: {p.summary}",
    "NextMoves": lambda p: "next: " + "; ".join(p.next_moves),
    "AuditQuery": lambda p: "on-demand audit requested",
    "AuditReport": _report,
    **PROJECT_SUMMARIES,
}


def summarise(type_: str, payload: object) -> str:
    """Return a one-line summary of a bus message for the timeline."""
    fn = SUMMARIES.get(type_)
    if fn is not None and isinstance(payload, dict):
        try:
            return _clip(fn(read_payload(type_, payload)))
        except (TypeError, ValueError, AttributeError, KeyError):
            pass
    return _clip(json.dumps(payload, ensure_ascii=False, default=str))


def is_stuck(created_at: datetime, delivered_at: datetime | None, now=None) -> bool:
    """Return True for a message still undelivered long after it was sent."""
    age = ((now or timezone.now()) - created_at).total_seconds()
    return delivered_at is None and age > STUCK_AFTER_S


def decorate(msg: BusMessage, now: datetime | None = None) -> BusMessage:
    """Attach the row's summary, and flag a message stuck before delivery."""
    msg.summary = summarise(msg.type, msg.payload)
    msg.stuck = is_stuck(msg.created_at, msg.delivered_at, now)
    return msg


def bus_page(run, before: int | None = None) -> dict:
    """Return the newest page of a run's messages (below ``before``), oldest first.

    ``earlier_before`` is the id to ask the next page below, or None when this
    page reaches the run's first message.
    """
    rows = BusMessage.objects.filter(run=run).order_by("-id")
    if before is not None:
        rows = rows.filter(id__lt=before)
    rows = list(rows[: BUS_PAGE + 1])
    more = len(rows) > BUS_PAGE
    rows = rows[:BUS_PAGE][::-1]
    now = timezone.now()
    for m in rows:
        decorate(m, now)
    return {"bus_messages": rows, "earlier_before": rows[0].id if more else None}
