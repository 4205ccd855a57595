"""R4b on the bus: fan-in of a round's outcomes under a row lock, then the gate.

Exactly one evaluation per round: the outcome that completes the round (or the
fan-in deadline, whichever comes first) claims it; stale rounds are ignored.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from artoo_web import bus, followups, runtime
from artoo_web.handlers import dispatcher
from artoo_web.models import BusMessage, Run, RunStatus
from artoo_web.runs import lock_current
from roles import meta_validator
from roles.contracts import DispatchManifest, SubTaskOutcome
from roles.llm.client import LLMCancelled

ROUND_STATUSES = (
    RunStatus.PLANNING,
    RunStatus.REPLANNING,
    RunStatus.RUNNING,
    RunStatus.VALIDATING,
)


def arm_deadline(msg: BusMessage) -> None:
    """(R4b, DispatchManifest): start the fan-in clock; judge an empty plan now."""
    args = [str(msg.run_id), msg.round]
    if not msg.payload.get("subtask_ids"):
        if claim_evaluation(msg.run_id, msg.round):
            followups.later(followups.EVALUATE_ROUND, args)
        return
    followups.later(
        followups.FANIN_DEADLINE, args, countdown=settings.ARTOO_FANIN_DEADLINE_S
    )


def collect_outcome(msg: BusMessage) -> None:
    """(R4b, SubTaskOutcome): record it, release groups, claim the evaluation."""
    run = lock_current(msg.run_id, msg.round)
    state = run.load_state() if run else None
    fan = state.fanin_of(msg.round) if state else None
    if fan is None:
        return
    dispatcher.record(fan, SubTaskOutcome.model_validate(msg.payload))
    if fan.is_complete() and fan.claim_evaluation():
        run.status = RunStatus.VALIDATING
        followups.later(followups.EVALUATE_ROUND, [str(run.id), msg.round])
    run.keep_state(state)
    run.save(update_fields=["state", "status", "updated_at"])


def claim_evaluation(run_id, round_: int, *, deadline: bool = False) -> bool:
    """Mark the round evaluated; on the deadline, missing outcomes count as failed."""
    with transaction.atomic():
        run = lock_current(run_id, round_)
        state = run.load_state() if run else None
        fan = state.fanin_of(round_) if state else None
        if fan is None or fan.evaluated:
            return False
        if deadline:
            fan.fail_missing(run.task_id or "task")
        fan.claim_evaluation()
        run.keep_state(state)
        run.status = RunStatus.VALIDATING
        run.save(update_fields=["state", "status", "updated_at"])
        return True


def evaluate(run_id, round_: int) -> str:
    """Run R4b's gate over the round's outcomes and send its verdict to R7."""
    run = Run.objects.get(id=run_id)
    state = run.load_state()
    fan = state.fanin_of(round_)
    if run.is_terminal or run.round != round_ or fan is None or fan.sent:
        return "stale"
    manifest = DispatchManifest.model_validate(
        BusMessage.objects.filter(run=run, round=round_, type="DispatchManifest")
        .latest("id")
        .payload
    )
    try:
        result = meta_validator.evaluate(
            manifest,
            fan.ordered_outcomes(),
            model=runtime.model_for("R4b", run),
            elapsed_ms=runtime.elapsed_ms(run),
            replans_so_far=state.replan_requests,
            intent=state.spec.intent if state.spec else "",
        )
    except LLMCancelled:
        return "cancelled"
    with transaction.atomic():
        run = lock_current(run_id, round_)
        state = run.load_state() if run else None
        fan = state.fanin_of(round_) if state else None
        if fan is None or fan.sent:
            return "stale"
        runtime.record_usage(run, "R4b", result.usage)
        fan.sent = True
        kind = type(result.message).__name__
        if kind == "ReplanRequest":
            state.replan_requests += 1
        run.keep_state(state)
        run.save(update_fields=["state", "updated_at"])
        bus.send(run, "R4b", "R7", kind, result.message)
    return kind


def deadline_passed(run_id, round_: int) -> str:
    """Judge a round whose outcomes did not all arrive in time.

    Time spent waiting on the operator does not count: while an approval of the
    round waits, its end re-arms the deadline; otherwise a deadline pushed back
    by such waits comes again when it is due.
    """
    left = dispatcher.deadline_left(run_id, round_)
    if left is None:
        return "waiting-on-human"
    if left > 0:
        args = [str(run_id), round_]
        followups.later(followups.FANIN_DEADLINE, args, countdown=left)
        return "not-yet"
    if claim_evaluation(run_id, round_, deadline=True):
        return evaluate(run_id, round_)
    run = Run.objects.filter(id=run_id).first()
    fan = run.load_state().fanin_of(round_) if run else None
    if run and not run.is_terminal and run.round == round_ and fan and not fan.sent:
        # Claimed earlier but the evaluation never went out (a worker died).
        return evaluate(run_id, round_)
    return "on-time"


def sweep_rounds(older_than_s: int) -> int:
    """Re-enqueue the follow-ups of rounds that stalled: lost tasks, dead workers."""
    now = timezone.now()
    quiet = Run.objects.filter(updated_at__lt=now - timedelta(seconds=older_than_s))
    count = 0
    for run in quiet.filter(status__in=ROUND_STATUSES).only("id", "round", "state"):
        state, args = run.load_state(), [str(run.id), run.round]
        fan = state.fanin_of(run.round)
        if not state.is_planned(run.round):
            # R2 asked memory (and stored its directive); the answer never came.
            if not run.messages.filter(round=run.round, type="MemoryQuery").exists():
                continue
            followups.enqueue(followups.PLAN_WITHOUT_MEMORY, args)
        elif fan is None:
            continue
        elif fan.evaluated and not fan.sent:
            followups.enqueue(followups.EVALUATE_ROUND, args)
        elif not fan.evaluated and fan.is_overdue(now, settings.ARTOO_FANIN_DEADLINE_S):
            followups.enqueue(followups.FANIN_DEADLINE, args)
        else:
            continue
        count += 1
    return count
