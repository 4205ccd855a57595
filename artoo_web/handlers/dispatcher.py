"""The dispatcher: later sequence groups wait until the earlier ones are in.

A SubTask of a group not yet released is held (left undelivered, its message id
noted in the run's fan-in); recording the outcome that completes a group
releases the next one, and its held messages are enqueued on commit. The
decisions are ``roles.runstate.FanIn``'s.
"""

from __future__ import annotations

from django.db import transaction

from artoo_web import bus
from artoo_web.models import BusMessage, Run
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
