"""R3 ⇄ R4a on the bus: one effector task per SubTask runs the fast loop.

SubTasks of a later sequence group are held by the dispatcher until their
group is released; outputs of earlier groups are injected then.

A call that needs the operator's Law 1 approval parks the subtask: what its
executor needs to carry on (the fast loop's attempt, the conversation, the
evidence, the command's pending effect) is stored on the Approval row and the
task returns, holding no worker. The ApprovalDecision message, or the timeout
(``expire``), resumes it on any worker, once. An executor whose round closed
stops, as on cancel, and its approvals are void.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from celery import current_task
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from artoo_web import bus, fairshare, followups, projectchecks, runs, runtime, telemetry
from artoo_web.handlers import dispatcher
from artoo_web.models import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalGate,
    ApprovalStatus,
    BusMessage,
    Run,
    RunStatus,
)
from roles import agent_validator, executor
from roles.claims.question import question_for
from roles.claims.rederive import REDERIVE_TURNS, rederive, rederives
from roles.contracts import SubTask
from roles.executor_state import ParkedSubtask, Work
from roles.fastloop import run_fast_loop
from roles.tools import ApprovalAsk, Toolbox, ToolboxConfig
from roles.tools.effect_pending import discard, pending_call
from roles.tools.errors import ToolPaused
from roles.tools.own_files import Made, merge
from roles.tools.specs import not_offered

log = logging.getLogger(__name__)

ROUND_CHECK_EVERY_S = 1.0
DECIDED = (ApprovalStatus.APPROVED, ApprovalStatus.DENIED, ApprovalStatus.EXPIRED)


def run_subtask(msg: BusMessage) -> str:
    """(R3, SubTask): run R3 ⇄ R4a and send the SubTaskOutcome to R4b.

    A subtask starts when its user's fair share of the slots allows; until then
    it waits, undelivered, in its user's queue (``artoo_web.fairshare``).
    """
    subtask = SubTask.model_validate(msg.payload)
    run = Run.objects.get(id=msg.run_id)
    if run.is_terminal or msg.round != run.round:
        fairshare.forget(msg.id)
        with bus.delivering(msg):
            return "stale"
    fan = run.load_state().fanin_of(msg.round)
    if fan is not None and not fan.is_released(subtask.sequence):
        if dispatcher.hold(msg, subtask):
            return "held"
        fan = Run.objects.get(id=msg.run_id).load_state().fanin_of(msg.round)
    place = fairshare.claim(msg, run.owner_id)
    if place != fairshare.STARTED:
        if place == fairshare.QUEUED:
            runtime.trace(run, "R3", "subtask_waiting", subtask_id=subtask.subtask_id)
        return "waiting"
    try:
        runtime.trace(
            run, "R3", "subtask_started", subtask_id=subtask.subtask_id, worker=worker()
        )
        prior = fan.matched_outputs() if fan is not None else ""
        evidence = fan.matched_evidence() if fan is not None else []
        work = Work(subtask=subtask, prior=prior, evidence=evidence)
        return carry_on(run, msg.round, work, lambda: bus.delivering(msg))
    finally:
        fairshare.release(msg.id)


def note_fast_loop(msg: BusMessage) -> None:
    """(R4a, ExecutionResult | R3, CorrectionSignal): the record of the fast loop.

    Such records are delivered by publication (``roles.routes.RECORD_ONLY``);
    this handler marks delivered one stored before they were.
    """


def note_decision(msg: BusMessage) -> None:
    """(R3, ApprovalDecision): resume the subtask parked on this approval."""
    resume(msg.payload["approval_id"])
    with bus.delivering(msg):
        pass


def worker() -> str:
    """Return the Celery node running this task (which machine ran a subtask)."""
    hostname = getattr(getattr(current_task, "request", None), "hostname", None)
    return hostname or f"{socket.gethostname()}:{os.getpid()}"


def carry_on(
    run: Run,
    round_: int,
    work: Work,
    committing,
    parked: ParkedSubtask | None = None,
) -> str:
    """Run (or resume) a subtask; send its outcome, or park it on an approval.

    ``committing()`` opens the transaction that stores the result and yields
    whether this delivery is the first; ``work`` holds the subtask and the
    outputs of earlier groups; ``parked`` the state of a resumed subtask.
    """
    subtask = work.subtask
    try:
        outcome, made = effect(run, round_, subtask, work, parked)
    except ToolPaused as paused:
        return park(run, round_, work, paused, committing)
    with committing() as fresh:
        if not fresh:
            return "already-delivered"
        locked = runs.lock_current(run.id, round_)
        if locked is None or not is_round_open(run.id, round_):
            # The round closed meanwhile: its outcome would be judged nowhere.
            runtime.trace(run, "R3", "subtask_stopped", subtask_id=subtask.subtask_id)
            return "stopped"
        keep_made(locked, made)
        bus.send(run, "R4a", "R4b", "SubTaskOutcome", outcome, round=round_)
    return "delivered"


def keep_made(run: Run, made: Made) -> None:
    """Remember the files the subtask wrote, for the run's later subtasks: the
    marks it inherited are kept as they were, never taken anew."""
    state = run.load_state()
    kept = merge(state.made, made)
    if kept != state.made:
        state.made = kept
        run.keep_state(state)
        run.save(update_fields=["state", "updated_at"])


def effect(
    run: Run,
    round_: int,
    subtask: SubTask,
    work: Work,
    parked: ParkedSubtask | None = None,
):
    """Run R3 ⇄ R4a for one subtask; return its SubTaskOutcome and the files
    its toolbox made (or took over as the run's own).

    ``work`` holds the outputs of earlier groups (``prior``) and their tool
    evidence (``evidence``), which R4a counts as this subtask's inherited evidence.

    Raises ToolPaused, with everything needed to resume, when a call waits on
    the operator; ``parked`` is that state back, with the operator's answer.
    """
    if parked is None:  # a subtask that never parked resumes from nothing
        parked = ParkedSubtask(subtask=subtask)
    cancelled = stopper(run.id, round_)
    toolbox = toolbox_for(run, cancelled, parked)
    workspace = toolbox.workspace
    exec_model = runtime.model_for("R3", run, cancelled)
    val_model = runtime.model_for("R4a", run, cancelled)
    spec = run.load_state().spec
    resuming = {"executor": parked.executor}

    def execute_fn(correction, attempt):
        # Only the attempt that paused resumes; a later one starts afresh.
        state, resuming["executor"] = resuming["executor"], None
        return executor.execute(
            subtask,
            model=exec_model,
            toolbox=toolbox,
            correction=correction,
            prior_outputs=work.prior,
            attempt=attempt,
            resume=state,
        )

    def validate_fn(result, attempt, trajectory):
        return agent_validator.validate(
            subtask,
            result,
            model=val_model,
            attempt=attempt,
            trajectory=trajectory,
            workspace=workspace,
            inherited=work.evidence,
            request=run.raw_input,
            question=spec.asks if spec else None,
            infrastructure_error="cancelled" if cancelled() else "",
        )

    def on_result(result, execution):
        runtime.record_usage(run, "R3", execution.usage)
        bus.send(run, "R3", "R4a", "ExecutionResult", result, round=round_)

    def on_correction(correction, validation):
        runtime.record_usage(run, "R4a", validation.usage)
        bus.send(run, "R4a", "R3", "CorrectionSignal", correction, round=round_)

    def derive_again(second, blocked):
        # Read-only: the second derivation's every Law 1 question is refused.
        started = time.monotonic()
        box = toolbox_for(
            run, cancelled, ParkedSubtask(subtask=second), blocked, refuse=True
        )
        try:
            execution = executor.execute(
                second,
                model=exec_model,
                toolbox=box,
                max_turns=REDERIVE_TURNS,
                again=True,
            )
        finally:
            box.kill()
        on_result(execution.result, execution)
        usage = execution.usage
        runtime.trace(
            run,
            "R4a",
            "rederivation",
            subtask_id=subtask.subtask_id,
            model_calls=len(usage.calls) if usage else 0,
            tokens=(usage.prompt_tokens + usage.completion_tokens) if usage else 0,
            wall_ms=int((time.monotonic() - started) * 1000),
        )
        return execution

    def rederive_fn(result):
        asked = question_for(spec.asks if spec else None, run.raw_input)
        strict = exec_model.settings.rederive == "strict"
        return rederive(
            subtask, result, asked, run.raw_input, derive_again, strict=strict
        )

    try:
        outcome, _, validations = run_fast_loop(
            subtask,
            execute_fn=execute_fn,
            validate_fn=validate_fn,
            on_result=on_result,
            on_correction=on_correction,
            resume=parked.fastloop,
            rederive_fn=rederive_fn if rederives(exec_model) else None,
        )
    except ToolPaused as paused:
        paused.state["evidence"] = list(toolbox.evidence)
        paused.state["records"] = [asdict(r) for r in toolbox.records]
        paused.state["made"] = toolbox.made.as_data()
        raise
    finally:
        toolbox.kill()
    if validations:
        runtime.record_usage(run, "R4a", validations[-1].usage)
    return outcome, toolbox.made


def toolbox_for(
    run: Run,
    cancelled: Callable[[], bool],
    parked: ParkedSubtask,
    derived: Sequence[str] = (),
    *,
    refuse: bool = False,
) -> Toolbox:
    """Return the subtask's Toolbox; a resumed one gets its evidence and answer.

    ``derived`` are the calls of a first derivation, refused in this second
    one; with ``refuse`` every Law 1 question is answered no, so nothing parks.
    """
    state = run.load_state()
    blocked_tools, blocked_targets = state.blocked()
    answer = question_for(state.spec.asks if state.spec else None, run.raw_input).answer
    workspace = runtime.workspace_for(run)
    sandbox, sandbox_error = runtime.sandbox_for(run, workspace)
    shared = runtime.shared_area(run.owner_id)
    pending, approved = parked.pending, parked.approved
    toolbox = Toolbox(
        workspace,
        ToolboxConfig(
            allowed_paths=[
                *settings.ARTOO_ALLOWED_PATHS,
                *([shared] if shared else []),
            ],
            blocked_tools=blocked_tools,
            unavailable_tools=[*runtime.unavailable_tools(), *not_offered(answer)],
            blocked_targets=blocked_targets,
            derived_targets=derived,
            shell_timeout_s=settings.ARTOO_SHELL_TIMEOUT_S,
            sandbox_error=sandbox_error,
            hidden_paths=runtime.hidden_paths(),
            protected_paths=protected_paths(run, workspace),
            fetch_local=settings.ARTOO_SANDBOX_NETWORK == "host",
            mcp_tools=runtime.run_mcp_tools(run),
        ),
        approve=(lambda ask: False) if refuse else Operator(pending, approved),
        cancelled=cancelled,
        sandbox=sandbox,
        memory_rules=state.memory_rules(),
    )
    toolbox.evidence = list(parked.evidence)
    toolbox.records = list(parked.records)
    # The run's files from earlier subtasks, then this subtask's own.
    toolbox.made.inherit(state.made)
    toolbox.made.resume(parked.made)
    if pending and pending["kind"] == "effect":
        toolbox.settle(pending, approved)
    return telemetry.watch_tools(toolbox, run.id)


def protected_paths(run: Run, workspace: Path) -> list[Path]:
    """Return the files a project task may not change: its milestone's tests."""
    if run.project_id is None:
        return []
    return [workspace / name for name in projectchecks.protected(run.project)]


class Operator:
    """Law 1's operator for one subtask: park on a question, answer a decided one.

    A gated call asked again on resume gets the operator's answer; any other
    question parks the subtask (ToolPaused).
    """

    def __init__(self, decided: dict | None, approved: bool):
        self.decided = decided if decided and decided["kind"] == "call" else None
        self.approved = approved

    def __call__(self, ask: ApprovalAsk) -> bool:
        if self.decided is not None and self.decided["ask"] == _plain(ask):
            self.decided = None
            return self.approved
        raise ToolPaused(pending_call(ask))


def _plain(ask: ApprovalAsk) -> dict:
    """Return the ask as it reads back from the database (tuples as lists)."""
    return {**asdict(ask), "changes": [dict(c) for c in ask.changes]}


def park(run: Run, round_: int, work: Work, paused: ToolPaused, committing) -> str:
    """Store a paused subtask on a new Approval and ask the operator; return."""
    pending = paused.pending or {}
    ask = pending.get("ask") or {}
    parked = ParkedSubtask.of(work, paused.state, pending)
    with committing() as fresh:
        locked = runs.lock_current(run.id, round_)
        if not fresh or locked is None or not ask or not is_round_open(run.id, round_):
            transaction.on_commit(lambda: discard(pending))
            return "stopped"
        runtime.record_usage(locked, "R3", paused.usage)
        approval = Approval.objects.create(
            run=locked,
            round=round_,
            subtask_id=work.subtask.subtask_id,
            tool=ask["tool"],
            command=ask["command"],
            reason=ask["reason"],
            gate=ask.get("gate") or ApprovalGate.LAW1,
            changes=list(ask.get("changes") or ()),
            parked=parked.model_dump(mode="json"),
        )
        if locked.status == RunStatus.RUNNING:
            locked.status = RunStatus.AWAITING_APPROVAL
            locked.save(update_fields=["status", "updated_at"])
        bus.send(locked, "R3", "User", "ApprovalRequest", request_of(approval, ask))
        followups.later(
            followups.EXPIRE_APPROVAL,
            [str(approval.id)],
            countdown=settings.ARTOO_APPROVAL_TIMEOUT_S,
        )
        runtime.trace(
            locked,
            "R3",
            "subtask_parked",
            subtask_id=approval.subtask_id,
            approval_id=str(approval.id),
        )
    return "parked"


def request_of(approval: Approval, ask: dict) -> dict:
    """Return the ApprovalRequest's payload for the operator."""
    return {
        "approval_id": str(approval.id),
        "subtask_id": approval.subtask_id,
        "tool": approval.tool,
        "command": approval.command,
        "args": ask["args"],
        "reason": approval.reason,
        "gate": approval.gate,
        "changes": approval.changes,
    }


def resume(approval_id) -> str:
    """Carry on the subtask parked on a decided approval, once.

    A redelivered decision, or a second timeout, finds it resumed and does
    nothing. An approval whose round closed is voided: its effect is discarded.
    """
    claimed = claim_resume(approval_id)
    if claimed is None:
        return "already-resumed"
    run, approval = claimed
    parked = ParkedSubtask.model_validate(approval.parked)
    if approval.status not in DECIDED or not runs.is_live(run, approval):
        discard(parked.pending)
        return "void"
    runtime.trace(
        run,
        "R3",
        "subtask_resumed",
        subtask_id=approval.subtask_id,
        approval_id=str(approval.id),
        decision=approval.status,
        worker=worker(),
    )
    rearm_deadline(run, approval.round)
    approved = approval.status == ApprovalStatus.APPROVED
    parked = parked.model_copy(update={"approved": approved})
    return carry_on(run, approval.round, parked, resumed, parked)


def claim_resume(approval_id) -> tuple[Run, Approval] | None:
    """Mark a decided approval resumed; None when it waits or was resumed already."""
    with transaction.atomic():
        run, approval = lock_approval(approval_id)
        if run is None or approval is None or approval.resumed_at is not None:
            return None
        if approval.status == ApprovalStatus.PENDING:
            return None
        approval.resumed_at = timezone.now()
        approval.save(update_fields=["resumed_at"])
    if not approval.parked:
        return None
    return run, approval


def lock_approval(approval_id) -> tuple[Run | None, Approval | None]:
    """Lock an approval's run, then the approval (the order every path takes)."""
    found = Approval.objects.filter(id=approval_id).values_list("run_id", flat=True)
    run_id = found.first()
    if run_id is None:
        return None, None
    run = Run.objects.select_for_update().get(id=run_id)
    return run, Approval.objects.select_for_update().get(id=approval_id)


@contextmanager
def resumed():
    """Open the transaction that stores a resumed subtask's result (claimed once)."""
    with transaction.atomic():
        yield True


def rearm_deadline(run: Run, round_: int) -> None:
    """Schedule the round's fan-in deadline again once no person is waited on."""
    left = dispatcher.deadline_left(run.id, round_)
    if left is not None:
        followups.later(
            followups.FANIN_DEADLINE, [str(run.id), round_], countdown=max(left, 0)
        )


def expire(approval_id) -> str:
    """Deny an approval left unanswered past its timeout, then resume its subtask."""
    with transaction.atomic():
        run, approval = lock_approval(approval_id)
        if run is None or approval is None:
            return "missing"
        if approval.status == ApprovalStatus.PENDING:
            due = approval.created_at + timedelta(
                seconds=settings.ARTOO_APPROVAL_TIMEOUT_S
            )
            left = (due - timezone.now()).total_seconds()
            if left > 0:
                followups.later(
                    followups.EXPIRE_APPROVAL, [str(approval_id)], countdown=left
                )
                return "not-yet"
            approval.status = ApprovalStatus.EXPIRED
            approval.decided_at = timezone.now()
            approval.save(update_fields=["status", "decided_at"])
            runs.end_human_wait(run)
    return resume(approval_id)


def sweep_approvals(older_than_s: int) -> int:
    """Expire or resume what a lost follow-up left: overdue or stranded approvals."""
    now = timezone.now()
    timeout = timedelta(seconds=settings.ARTOO_APPROVAL_TIMEOUT_S + older_than_s)
    overdue = Approval.objects.filter(
        status=ApprovalStatus.PENDING, created_at__lt=now - timeout
    )
    stranded = Approval.objects.filter(
        status__in=(ApprovalStatus.EXPIRED, ApprovalStatus.VOIDED),
        resumed_at=None,
        decided_at__lt=now - timedelta(seconds=older_than_s),
    )
    ids = [*overdue.values_list("id", flat=True)[:100]]
    ids += stranded.values_list("id", flat=True)[:100]
    for approval_id in ids:
        followups.enqueue(followups.EXPIRE_APPROVAL, [str(approval_id)])
    return len(ids)


def stopper(run_id, round_: int) -> Callable[[], bool]:
    """Return a cheap check: the run was cancelled, or this round closed."""
    cancelled = runtime.canceller(run_id)
    seen = {"at": -ROUND_CHECK_EVERY_S, "closed": False}

    def stopped() -> bool:
        if cancelled():
            return True
        now = time.monotonic()
        if not seen["closed"] and now - seen["at"] >= ROUND_CHECK_EVERY_S:
            seen["at"] = now
            try:
                seen["closed"] = not is_round_open(run_id, round_)
            except DatabaseError:
                log.warning("run %s: round check failed", run_id, exc_info=True)
        return seen["closed"]

    return stopped


def is_round_open(run_id, round_: int) -> bool:
    """Return True while ``round_`` is the run's round and it is not judged yet."""
    row = (
        Run.objects.filter(id=run_id)
        .values_list(
            "status", "round", "state__fanin__round", "state__fanin__evaluated"
        )
        .first()
    )
    if row is None:
        return False
    status, current, fan_round, evaluated = row
    if status in TERMINAL_STATUSES or current != round_:
        return False
    return not (fan_round == round_ and evaluated is True)
