"""R4b on the bus: fan-in of a round's outcomes under a row lock, then the gate.

Exactly one evaluation per round: the outcome that completes the round (or the
fan-in deadline, whichever comes first) claims it; stale rounds are ignored.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from artoo_web import bus, runtime
from artoo_web.models import BusMessage, Run, RunStatus
from artoo_web.planning import fanin_deadline_s
from roles import meta_validator
from roles.contracts import DispatchManifest, SubTaskOutcome
from roles.llm import LLMCancelled

log = logging.getLogger(__name__)


@bus.handler("R4b", "DispatchManifest")
def arm_deadline(msg: BusMessage) -> None:
    """Start the round's fan-in clock; an empty manifest is judged at once."""
    from artoo_web.tasks import evaluate_round, fanin_deadline

    args = [str(msg.run_id), msg.round]
    if not msg.payload.get("subtask_ids"):
        if claim_evaluation(msg.run_id, msg.round):
            runtime.later(evaluate_round, args)
        return
    runtime.later(fanin_deadline, args, countdown=fanin_deadline_s())


@bus.handler("R4b", "SubTaskOutcome")
def collect_outcome(msg: BusMessage) -> None:
    """Record an outcome, release the next group, and claim the evaluation."""
    from artoo_web.tasks import evaluate_round

    run = Run.objects.select_for_update().get(id=msg.run_id)
    fan = run.state.get("fanin", {})
    if run.is_terminal or msg.round != run.round or fan.get("round") != msg.round:
        return
    outcome = msg.payload
    fan["outcomes"][outcome["subtask_id"]] = outcome
    release_groups(run, fan)
    complete = set(fan["subtask_ids"]) <= set(fan["outcomes"])
    if complete and not fan["evaluated"]:
        fan["evaluated"] = True
        run.status = RunStatus.VALIDATING
        runtime.later(evaluate_round, [str(run.id), msg.round])
    run.save(update_fields=["state", "status", "updated_at"])


def release_groups(run: Run, fan: dict) -> None:
    """Release the next sequence group once every subtask of the current one is in."""
    while True:
        current = fan["released"]
        members = fan["groups"].get(str(current), [])
        if not set(members) <= set(fan["outcomes"]):
            return
        later = [g for g in fan["order"] if g > current]
        if not later:
            return
        fan["released"] = later[0]
        held = fan["held"].pop(str(later[0]), [])
        for message_id in held:
            transaction.on_commit(lambda m=message_id: bus.enqueue(m, "pipeline"))


def claim_evaluation(run_id, round_: int, *, deadline: bool = False) -> bool:
    """Mark the round evaluated; on the deadline, missing outcomes count as failed."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        fan = run.state.get("fanin", {})
        if run.is_terminal or run.round != round_ or fan.get("evaluated"):
            return False
        if deadline:
            for subtask_id in set(fan["subtask_ids"]) - set(fan["outcomes"]):
                fan["outcomes"][subtask_id] = missing_outcome(run, subtask_id)
        fan["evaluated"] = True
        run.status = RunStatus.VALIDATING
        run.save(update_fields=["state", "status", "updated_at"])
        return True


def missing_outcome(run: Run, subtask_id: str) -> dict:
    return SubTaskOutcome(
        subtask_id=subtask_id,
        parent_task_id=run.task_id or "task",
        status="failed",
        failure_reason="infrastructure: no outcome before the fan-in deadline",
    ).model_dump(mode="json")


def evaluate(run_id, round_: int) -> str:
    """Run R4b's gate over the round's outcomes and send its verdict to R7."""
    run = Run.objects.get(id=run_id)
    fan = run.state.get("fanin", {})
    if run.is_terminal or run.round != round_ or fan.get("sent"):
        return "stale"
    manifest = DispatchManifest.model_validate(
        BusMessage.objects.filter(run=run, round=round_, type="DispatchManifest")
        .latest("id")
        .payload
    )
    outcomes = [
        SubTaskOutcome.model_validate(fan["outcomes"][s])
        for s in fan["subtask_ids"]
        if s in fan["outcomes"]
    ]
    replans = run.state.get("replan_requests", 0)
    try:
        result = meta_validator.evaluate(
            manifest,
            outcomes,
            model=runtime.model_for("R4b", run),
            elapsed_ms=runtime.elapsed_ms(run),
            replans_so_far=replans,
            intent=(run.state.get("spec") or {}).get("intent", ""),
        )
    except LLMCancelled:
        return "cancelled"
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        fan = run.state.get("fanin", {})
        if run.is_terminal or run.round != round_ or fan.get("sent"):
            return "stale"
        runtime.record_usage(run, "R4b", result.usage)
        fan["sent"] = True
        kind = type(result.message).__name__
        if kind == "ReplanRequest":
            run.state["replan_requests"] = replans + 1
        run.save(update_fields=["state", "updated_at"])
        bus.send(run, "R4b", "R7", kind, result.message)
    return kind


def deadline_passed(run_id, round_: int) -> str:
    """Judge a round whose outcomes did not all arrive in time."""
    if claim_evaluation(run_id, round_, deadline=True):
        return evaluate(run_id, round_)
    run = Run.objects.filter(id=run_id).first()
    fan = (run.state if run else {}).get("fanin", {})
    if run and not run.is_terminal and run.round == round_ and not fan.get("sent"):
        # Claimed earlier but the evaluation never went out (a worker died).
        return evaluate(run_id, round_)
    return "on-time"


def sweep_rounds(older_than_s: int) -> int:
    """Re-enqueue the follow-ups of rounds that stalled: lost tasks, dead workers."""
    from artoo_web.tasks import evaluate_round, fanin_deadline, plan_without_memory

    now = timezone.now()
    quiet = Run.objects.filter(updated_at__lt=now - timedelta(seconds=older_than_s))
    count = 0
    for run in quiet.filter(status__in=ROUND_STATUSES).only("id", "round", "state"):
        fan, args = run.state.get("fanin", {}), [str(run.id), run.round]
        if run.state.get("planned_round", -1) < run.round:
            # R2 asked memory (and stored its directive); the answer never came.
            if not run.messages.filter(round=run.round, type="MemoryQuery").exists():
                continue
            plan_without_memory.apply_async(args=args, queue="pipeline")
        elif fan.get("round") != run.round:
            continue
        elif fan.get("evaluated") and not fan.get("sent"):
            evaluate_round.apply_async(args=args, queue="pipeline")
        elif not fan.get("evaluated") and is_overdue(fan, now):
            fanin_deadline.apply_async(args=args, queue="pipeline")
        else:
            continue
        count += 1
    return count


ROUND_STATUSES = (
    RunStatus.PLANNING,
    RunStatus.REPLANNING,
    RunStatus.RUNNING,
    RunStatus.VALIDATING,
)


def is_overdue(fan: dict, now) -> bool:
    dispatched = parse_datetime(fan.get("dispatched_at") or "")
    return dispatched is not None and now - dispatched > timedelta(
        seconds=fanin_deadline_s()
    )
