"""A run's life from the outside: submit, answer, approve, cancel, and its end.

Views, the API and the CLI call these; handlers call ``lock_current``,
``finish`` and ``abandon``. Every decision about the run's course is a role's.

Time spent waiting on a person (a clarification, a Law 1 approval) is kept on
the run as ``human_wait_ms``: the union of those waits, so parallel approvals
count once. GGS takes it off Ω's elapsed time and the watchdog off the run's
deadline.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from artoo_web import (
    bus,
    followups,
    projects,
    redisconn,
    runfeed,
    runtime,
    telemetry,
    topics,
)
from artoo_web.models import (
    TERMINAL_STATUSES,
    Approval,
    ApprovalStatus,
    BusMessage,
    Project,
    Run,
    RunStatus,
    TraceEvent,
)
from artoo_web.summaries import usage_by_role
from roles import humantime, quota
from roles.contracts import FinalResult
from roles.ggs import solver as ggs
from roles.ggs.control import strategy_of

log = logging.getLogger(__name__)

CANCEL_FLAG_TTL_S = 86_400


class Conflict(Exception):
    """The run is not in a state that allows this operation."""


class Voided(Conflict):
    """The approval's round closed before a decision: nothing of it runs."""


def lock_current(run_id, round_: int | None = None) -> Run | None:
    """Lock the run's row; return None when it ended or ``round_`` is stale.

    The opening of every handler that changes a run: inside the caller's
    transaction, so what it stores is consistent with what it read.
    """
    run = Run.objects.select_for_update().filter(id=run_id).first()
    if run is None or run.is_terminal:
        return None
    if round_ is not None and run.round != round_:
        return None
    return run


class LimitReached(Exception):
    """The user may not submit a run now; nothing was created."""

    def __init__(self, refusal: quota.Refusal):
        super().__init__(refusal.message)
        self.refusal = refusal


def submit(owner, raw_input: str, control: str = "") -> Run:
    """Create a queued run and enqueue its first step on commit.

    ``control`` is the run's control strategy (``ARTOO_CONTROL`` when
    empty). Raise ValueError for an unknown strategy and LimitReached when the
    owner is at a limit, creating nothing.
    """
    name = strategy_of(control or settings.ARTOO_CONTROL).name
    with transaction.atomic():
        check_limits(owner)
        run = Run.objects.create(owner=owner, raw_input=raw_input, control=name)
        TraceEvent.objects.create(
            run=run,
            role="User",
            kind="submitted",
            data={"chars": len(raw_input), "control": name},
        )
        transaction.on_commit(lambda: enqueue_start(run.id))
    return run


def submit_task(project: Project, dispatch_id: str, raw_input: str) -> Run:
    """Start a project task's Run under its dispatch id, at most once.

    A dispatch id that already has a Run (a redelivered DispatchTask, or a
    worker that died after starting it) returns that Run and starts nothing.
    The project was admitted as a whole, so its tasks skip the per-user limits.
    """
    with transaction.atomic():
        run, created = Run.objects.get_or_create(
            project=project,
            dispatch_id=dispatch_id,
            defaults={"owner_id": project.owner_id, "raw_input": raw_input},
        )
        if created:
            TraceEvent.objects.create(
                run=run,
                role="User",
                kind="submitted",
                data={"chars": len(raw_input), "control": run.control},
            )
            transaction.on_commit(lambda: enqueue_start(run.id))
    return run


def check_limits(owner) -> None:
    """Raise LimitReached when ``owner`` may not submit one more run now.

    Called in the submission's transaction: it locks the owner's row first, so
    concurrent submissions of one user are counted one after another (SQLite
    takes its write lock at BEGIN, PostgreSQL waits on the row).
    """
    max_active = settings.ARTOO_USER_ACTIVE_RUNS
    per_minute = settings.ARTOO_USER_RUNS_PER_MINUTE
    if not (max_active or per_minute):
        return
    users = get_user_model().objects.select_for_update().filter(pk=owner.pk)
    list(users.values_list("pk", flat=True))
    now = timezone.now()
    mine = Run.objects.filter(owner=owner)
    recent = mine.filter(created_at__gt=now - timedelta(seconds=quota.WINDOW_S))
    refused = quota.refusal(
        mine.exclude(status__in=TERMINAL_STATUSES).count(),
        [t.timestamp() for t in recent.values_list("created_at", flat=True)],
        now.timestamp(),
        max_active=max_active,
        per_minute=per_minute,
    )
    if refused is not None:
        raise LimitReached(refused)


def enqueue_start(run_id) -> None:
    """Enqueue a run's first step; if the broker is away, the sweeper retries."""
    try:
        followups.enqueue(followups.START_RUN, [str(run_id)])
    except Exception:
        log.warning(
            "run %s: start not enqueued; the sweeper will", run_id, exc_info=True
        )


def restart_stalled(older_than_s: int) -> int:
    """Re-enqueue runs whose first step was lost (an enqueue or a worker died)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    stalled = Run.objects.filter(
        status__in=(RunStatus.QUEUED, RunStatus.PERCEIVING), updated_at__lt=cutoff
    ).exclude(messages__type="ClarificationAnswer", messages__delivered_at=None)
    count = 0
    for run_id in stalled.values_list("id", flat=True)[:100]:
        if not bus.is_leased(topics.perception_lease_key(run_id)):
            followups.enqueue(followups.START_RUN, [str(run_id)])
            count += 1
    return count


def answer_clarification(run: Run, answer: str) -> BusMessage:
    """Send the user's answer to R1; an empty answer means proceed."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        if run.status != RunStatus.NEEDS_INPUT:
            raise Conflict("This run is not waiting for an answer.")
        state = run.load_state()
        state.clarifications.append((state.question, answer))
        state.question = ""
        run.keep_state(state)
        run.status = RunStatus.PERCEIVING
        run.save(update_fields=["status", "state", "updated_at"])
        msg = bus.send(
            run,
            "User",
            "R1",
            "ClarificationAnswer",
            {"answer": answer, "round": len(state.clarifications)},
        )
        count_human_wait(run)
        return msg


def decide_approval(run: Run, approval_id, decision: str, user) -> Approval:
    """Record the operator's decision on a pending approval of this run.

    An approval whose round closed is voided instead (Voided): its subtask
    stopped with the round, and nothing of it runs.
    """
    if decision not in ("approve", "deny"):
        raise ValueError("decision must be 'approve' or 'deny'")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        approval = (
            Approval.objects.select_for_update().filter(run=run, id=approval_id).first()
        )
        if approval is None:
            raise Approval.DoesNotExist("No such approval for this run.")
        voided = approval.status == ApprovalStatus.PENDING and not is_live(
            run, approval
        )
        if voided:
            void_approvals(run, id=approval.id)
        elif approval.status == ApprovalStatus.VOIDED:
            raise Voided(VOIDED_NOTICE)
        elif approval.status != ApprovalStatus.PENDING:
            raise Conflict(f"This approval was already {approval.status}.")
        else:
            return record_decision(run, approval, decision, user)
    raise Voided(VOIDED_NOTICE)


VOIDED_NOTICE = (
    "This approval was voided: its round closed before a decision, so its "
    "subtask stopped and nothing of it was run."
)


def record_decision(run: Run, approval: Approval, decision: str, user) -> Approval:
    """Store a decision on a live approval and send it to the parked subtask."""
    approval.status = (
        ApprovalStatus.APPROVED if decision == "approve" else ApprovalStatus.DENIED
    )
    approval.decided_by = user
    approval.decided_at = timezone.now()
    approval.save()
    end_human_wait(run)
    bus.send(
        run,
        "User",
        "R3",
        "ApprovalDecision",
        {"approval_id": str(approval.id), "decision": decision},
    )
    return approval


def is_live(run: Run, approval: Approval) -> bool:
    """Return True while the approval's round is the run's open round."""
    if run.is_terminal or run.round != approval.round:
        return False
    fan = run.load_state().fanin_of(approval.round)
    return fan is None or not fan.evaluated


def void_approvals(run: Run, **filters) -> int:
    """Void the run's pending approvals (those matching ``filters``); count them."""
    pending = Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
    count = pending.filter(**filters).update(
        status=ApprovalStatus.VOIDED, decided_at=timezone.now()
    )
    if count:
        end_human_wait(run)
    return count


def end_human_wait(run: Run) -> None:
    """Count the run's human waits again; leave awaiting_approval when none is left.

    Called in the transaction that holds the run's row lock.
    """
    count_human_wait(run)
    pending = Approval.objects.filter(run=run, status=ApprovalStatus.PENDING)
    if run.status == RunStatus.AWAITING_APPROVAL and not pending.exists():
        run.status = RunStatus.RUNNING
        Run.objects.filter(id=run.id, status=RunStatus.AWAITING_APPROVAL).update(
            status=RunStatus.RUNNING
        )
        runfeed.changed(run.id, run.owner_id)


def count_human_wait(run: Run) -> int:
    """Store (and return) the time the run has waited on a person, counted once."""
    now = timezone.now()
    run.human_wait_ms = humantime.union_ms(human_waits(run, now), until=now)
    Run.objects.filter(id=run.id).update(human_wait_ms=run.human_wait_ms)
    return run.human_wait_ms


def human_waits(run: Run, now) -> list[humantime.Interval]:
    """Return every wait on a person: approvals, and clarification questions."""
    approvals = Approval.objects.filter(run=run).values_list("created_at", "decided_at")
    asked = run.messages.filter(type="ClarificationRequest")
    answered = run.messages.filter(type="ClarificationAnswer")
    return [(start, end or now) for start, end in approvals] + humantime.paired(
        asked.values_list("created_at", flat=True),
        answered.values_list("created_at", flat=True),
        now,
    )


def cancel(run: Run) -> FinalResult:
    """Cancel a run: stop its work, deny its approvals, record the FinalResult."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        if run.is_terminal:
            raise Conflict(f"The run is already {run.status}.")
        # Cancel denies what waits; the parked subtasks never resume.
        Approval.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.DENIED, decided_at=timezone.now()
        )
        final = abandon(
            run,
            "Cancelled by the operator before the run finished.",
            "cancelled",
            RunStatus.CANCELLED,
            "You cancelled the run before it finished.",
        )
        transaction.on_commit(lambda: raise_cancel_flag(run.id))
    return final


def raise_cancel_flag(run_id) -> None:
    try:
        redisconn.client().set(topics.cancel_key(run_id), "1", ex=CANCEL_FLAG_TTL_S)
    except Exception:
        log.warning("cancel flag for run %s not set in Redis", run_id, exc_info=True)


def abandon(
    run: Run, summary: str, rationale: str, status: str, reason: str = ""
) -> FinalResult:
    """End a locked run from outside the loop with GGS's abandon FinalResult.

    ``reason`` says why in the user's words.
    """
    final = ggs.forced_abandon(
        ggs.GGSState.from_dict(run.ggs_state or {}),
        run.task_id or "run",
        summary,
        rationale,
        run.load_state().loss,
        reason=reason,
    ).model_copy(update={"control": run.control})
    conclude(run, final, status)
    return final


def conclude(run: Run, final: FinalResult, status: str) -> None:
    """End a locked run and send its FinalResult to the user.

    The run's sandbox scratch is removed after the FinalResult is published, off
    the user's wait.
    """
    finish(run, final, status)
    bus.send(run, "R7", "User", "FinalResult", final)
    transaction.on_commit(lambda: runtime.discard_sandbox_state(run.id))


def finish(run: Run, final: FinalResult, status: str) -> None:
    """Store the FinalResult and the cost per role on the run, and end it.

    Approvals still pending are voided: their round ended with the run.
    """
    void_approvals(run)
    count_human_wait(run)
    state = run.load_state()
    state.cost_by_role = usage_by_role(run)
    run.keep_state(state)
    run.final_result = final.model_dump(mode="json")
    run.directive = final.directive
    run.status = status
    run.finished_at = timezone.now()
    run.save()
    projects.run_ended(run)
    telemetry.run_ended(run)


def give_up(msg: BusMessage, error: str, attempts: int) -> None:
    """End a run whose handler keeps failing: the error becomes its FinalResult."""
    with transaction.atomic():
        BusMessage.objects.filter(id=msg.id).update(delivered_at=timezone.now())
        run = lock_current(msg.run_id)
        if run is None:
            return
        run.error = error
        abandon(
            run,
            f"Abandoned: {msg.recipient} could not handle {msg.type} "
            f"after {attempts} attempts ({error}).",
            "handler error",
            RunStatus.FAILED,
            f"An internal error stopped it: a step failed {attempts} times ({error}).",
        )
