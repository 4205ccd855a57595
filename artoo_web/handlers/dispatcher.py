"""The dispatcher: later sequence groups wait until the earlier ones are in.

A SubTask of a group not yet released is held (left undelivered, its message id
noted in the run's fan-in); recording the outcome that completes a group
releases the next one, and its held messages are enqueued on commit. The
decisions are ``roles.runstate.FanIn``'s.

The round's fan-in deadline counts the time its subtasks work, not the time
they wait on the operator's Law 1 approvals (``deadline_left``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from artoo_web import bus
from artoo_web.models import Approval, ApprovalStatus, BusMessage, Run
from roles import humantime
from roles.contracts import SubTask, SubTaskOutcome
from roles.runstate import FanIn


def hold(msg: BusMessage, subtask: SubTask) -> bool:
    """Hold a SubTask of a later group; False if its group is released by now."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=msg.run_id)
        state = run.load_state()
        fan = state.fanin_of(msg.round)
        if fan is None or not fan.hold(subtask.sequence, msg.id):
            return False
        run.keep_state(state)
        run.save(update_fields=["state", "updated_at"])
        return True


def record(fan: FanIn, outcome: SubTaskOutcome) -> None:
    """Record an outcome and enqueue the SubTasks of the group it releases."""
    for message_id in fan.record(outcome):
        transaction.on_commit(lambda m=message_id: bus.enqueue(m, "pipeline"))


def deadline_left(run_id, round_: int) -> float | None:
    """Return the seconds left before the round's fan-in deadline, human waits
    excluded; None while one of its approvals waits on the operator."""
    run = Run.objects.filter(id=run_id).only("state").first()
    fan = run.load_state().fanin_of(round_) if run else None
    if fan is None or fan.dispatched_at is None or fan.evaluated:
        return 0.0
    approvals = Approval.objects.filter(run_id=run_id, round=round_)
    if approvals.filter(status=ApprovalStatus.PENDING).exists():
        return None
    now = timezone.now()
    waited_ms = humantime.union_ms(
        approvals.values_list("created_at", "decided_at"),
        since=fan.dispatched_at,
        until=now,
    )
    working_s = (now - fan.dispatched_at).total_seconds() - waited_ms / 1000
    return settings.ARTOO_FANIN_DEADLINE_S - working_s
