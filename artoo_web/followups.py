"""Enqueue follow-up work by task name: the one road from handlers to Celery.

Handlers, the bus and the run commands never import ``tasks`` (which imports
them); they name the task here. ``later`` enqueues when the transaction
commits; every such follow-up is also found by a sweeper from the run's state,
so a lost enqueue (or a broker that lost its data) delays a run, never strands it.
"""

from __future__ import annotations

import logging

from django.db import transaction

from artoo_web import redisconn
from artoo_web.celery import app

log = logging.getLogger(__name__)

DELIVER = "artoo_web.tasks.deliver"
START_RUN = "artoo_web.tasks.start_run"
PLAN_WITHOUT_MEMORY = "artoo_web.tasks.plan_without_memory"
EVALUATE_ROUND = "artoo_web.tasks.evaluate_round"
FANIN_DEADLINE = "artoo_web.tasks.fanin_deadline"
EXPIRE_APPROVAL = "artoo_web.tasks.expire_approval"
NEXT_MOVES = "artoo_web.tasks.next_moves"
DREAM = "artoo_web.tasks.dream"
MEMORY_SUMMARY = "artoo_web.tasks.memory_summary"
MEMORY_GROUPS = "artoo_web.tasks.memory_groups"
MEMORY_FORGET = "artoo_web.tasks.memory_forget"
DREAM_DEBOUNCE_S = 2


def enqueue(
    name: str,
    args: list,
    *,
    queue: str = "pipeline",
    countdown: float | None = None,
    answered: bool = False,
):
    """Enqueue the task now; raise what the broker raises.

    ``answered``: the caller waits on the result; otherwise none is stored.
    """
    return app.send_task(
        name, args=args, queue=queue, countdown=countdown, ignore_result=not answered
    )


def later(
    name: str, args: list, *, countdown: float | None = None, queue: str = "pipeline"
) -> None:
    """Enqueue the task when the transaction commits; if the broker is away, log."""

    def send() -> None:
        try:
            enqueue(name, args, queue=queue, countdown=countdown)
        except Exception:
            log.warning("%s%s not enqueued; the sweeper will", name, args)

    transaction.on_commit(send)


def dream_soon() -> None:
    """Schedule one Dreamer pass shortly after a run ends (debounced)."""
    try:
        if redisconn.client().set(
            "artoo.dream.pending", "1", nx=True, ex=DREAM_DEBOUNCE_S
        ):
            enqueue(DREAM, [], queue="memory", countdown=DREAM_DEBOUNCE_S)
    except Exception:
        # The 5-minute schedule still runs the Dreamer; a missed nudge is harmless.
        log.warning("dream nudge failed", exc_info=True)
