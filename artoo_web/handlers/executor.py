"""R3 ⇄ R4a on the bus: one effector task per SubTask runs the fast loop.

SubTasks of a later sequence group are held by the dispatcher until their
group is released; outputs of earlier groups are injected then. A Law 1
approval waits here for the operator's decision (the Approval row).
"""

from __future__ import annotations

import logging
import os
import socket
import time

from celery import current_task
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from artoo_web import bus, runtime
from artoo_web.handlers import dispatcher
from artoo_web.models import Approval, ApprovalStatus, BusMessage, Run, RunStatus
from roles import agent_validator, executor
from roles.contracts import SubTask
from roles.fastloop import run_fast_loop
from roles.tools import ApprovalAsk, Toolbox

log = logging.getLogger(__name__)

APPROVAL_POLL_S = 0.2


def run_subtask(msg: BusMessage) -> str:
    """(R3, SubTask): run R3 ⇄ R4a and send the SubTaskOutcome to R4b."""
    subtask = SubTask.model_validate(msg.payload)
    run = Run.objects.get(id=msg.run_id)
    if run.is_terminal or msg.round != run.round:
        with bus.delivering(msg):
            return "stale"
    fan = run.load_state().fanin_of(msg.round)
    if fan is not None and not fan.is_released(subtask.sequence):
        if dispatcher.hold(msg, subtask):
            return "held"
        fan = Run.objects.get(id=msg.run_id).load_state().fanin_of(msg.round)
    runtime.trace(
        run, "R3", "subtask_started", subtask_id=subtask.subtask_id, worker=worker()
    )
    prior = fan.matched_outputs() if fan is not None else ""
    outcome = effect(run, msg, subtask, prior)
    with bus.delivering(msg) as fresh:
        if fresh:
            bus.send(run, "R4a", "R4b", "SubTaskOutcome", outcome, round=msg.round)
    return "delivered"


def note_fast_loop(msg: BusMessage) -> None:
    """(R4a, ExecutionResult | R3, CorrectionSignal): the record of the fast loop."""


def note_decision(msg: BusMessage) -> None:
    """(R3, ApprovalDecision): the waiting executor reads the Approval row."""


def worker() -> str:
    """Return the Celery node running this task (which machine ran a subtask)."""
    hostname = getattr(getattr(current_task, "request", None), "hostname", None)
    return hostname or f"{socket.gethostname()}:{os.getpid()}"


def effect(run: Run, msg: BusMessage, subtask: SubTask, prior: str):
    """Run R3 ⇄ R4a for one subtask and return its SubTaskOutcome."""
    cancelled = runtime.canceller(run.id)
    blocked_tools, blocked_targets = run.load_state().blocked()
    workspace = runtime.workspace_for(run)
    sandbox, sandbox_error = runtime.sandbox_for(run, workspace)
    shared = runtime.shared_area(run.owner_id)
    toolbox = Toolbox(
        workspace,
        allowed_paths=[*settings.ARTOO_ALLOWED_PATHS, *([shared] if shared else [])],
        blocked_tools=[*blocked_tools, *runtime.unavailable_tools()],
        blocked_targets=blocked_targets,
        approve=lambda ask: wait_for_approval(run, subtask, ask, cancelled),
        cancelled=cancelled,
        shell_timeout_s=settings.ARTOO_SHELL_TIMEOUT_S,
        sandbox=sandbox,
        sandbox_error=sandbox_error,
        hidden_paths=runtime.hidden_paths(),
    )
    exec_model = runtime.model_for("R3", run, cancelled)
    val_model = runtime.model_for("R4a", run, cancelled)

    def execute_fn(correction, attempt):
        return executor.execute(
            subtask,
            model=exec_model,
            toolbox=toolbox,
            correction=correction,
            prior_outputs=prior,
            attempt=attempt,
        )

    def validate_fn(result, attempt, trajectory):
        return agent_validator.validate(
            subtask,
            result,
            model=val_model,
            attempt=attempt,
            trajectory=trajectory,
            workspace=workspace,
            infrastructure_error="cancelled" if cancelled() else "",
        )

    def on_result(result, execution):
        runtime.record_usage(run, "R3", execution.usage)
        bus.send(run, "R3", "R4a", "ExecutionResult", result, round=msg.round)

    def on_correction(correction, validation):
        runtime.record_usage(run, "R4a", validation.usage)
        bus.send(run, "R4a", "R3", "CorrectionSignal", correction, round=msg.round)

    try:
        outcome, _, validations = run_fast_loop(
            subtask,
            execute_fn=execute_fn,
            validate_fn=validate_fn,
            on_result=on_result,
            on_correction=on_correction,
        )
    finally:
        toolbox.kill()
    if validations:
        runtime.record_usage(run, "R4a", validations[-1].usage)
    return outcome


def wait_for_approval(run: Run, subtask: SubTask, ask: ApprovalAsk, cancelled) -> bool:
    """Ask the operator (Law 1) and wait; deny on timeout or cancel."""
    with transaction.atomic():
        approval = Approval.objects.create(
            run=run,
            subtask_id=subtask.subtask_id,
            tool=ask.tool,
            command=ask.command,
            reason=ask.reason,
            changes=list(ask.changes),
        )
        Run.objects.filter(id=run.id, status=RunStatus.RUNNING).update(
            status=RunStatus.AWAITING_APPROVAL
        )
        bus.send(
            run,
            "R3",
            "User",
            "ApprovalRequest",
            {
                "approval_id": str(approval.id),
                "subtask_id": subtask.subtask_id,
                "tool": ask.tool,
                "command": ask.command,
                "args": ask.args,
                "reason": ask.reason,
                "changes": list(ask.changes),
            },
        )
    started = time.monotonic()
    status = poll_decision(approval, started, cancelled)
    waited = int((time.monotonic() - started) * 1000)
    Run.objects.filter(id=run.id).update(human_wait_ms=F("human_wait_ms") + waited)
    Run.objects.filter(id=run.id, status=RunStatus.AWAITING_APPROVAL).update(
        status=RunStatus.RUNNING
    )
    return status == ApprovalStatus.APPROVED


def poll_decision(approval: Approval, started: float, cancelled) -> str:
    deadline = started + settings.ARTOO_APPROVAL_TIMEOUT_S
    while True:
        status = Approval.objects.filter(id=approval.id).values_list(
            "status", flat=True
        )[0]
        if status != ApprovalStatus.PENDING:
            return status
        if cancelled() or time.monotonic() > deadline:
            expired = Approval.objects.filter(
                id=approval.id, status=ApprovalStatus.PENDING
            )
            if expired.update(status=ApprovalStatus.EXPIRED, decided_at=timezone.now()):
                return ApprovalStatus.EXPIRED
            continue
        time.sleep(APPROVAL_POLL_S)
