"""Celery tasks: thin wrappers around the bus, the pipeline and memory."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from artoo_web import bus, fanin, memory_worker, pipeline, planning, redisconn, watchdog
from roles.contracts import FinalResult

DREAM_DEBOUNCE_S = 2


@shared_task(acks_late=True)
def deliver(message_id: int) -> str:
    """Deliver one bus message to its recipient's handler (idempotent)."""
    try:
        return bus.deliver(message_id)
    except Exception as exc:
        return pipeline.handler_failed(message_id, exc)


@shared_task
def sweep_outbox() -> int:
    """Re-enqueue messages whose delivery was lost, and runs whose start was."""
    after = settings.ARTOO_SWEEP_AFTER_S
    return (
        bus.sweep(after)
        + pipeline.restart_stalled(after)
        + fanin.sweep_rounds(after)
        + planning.sweep_next_moves(after)
    )


@shared_task(acks_late=True)
def start_run(run_id: str) -> str:
    """Take a queued run's first step."""
    return pipeline.start(run_id)


@shared_task(acks_late=True)
def plan_without_memory(run_id: str, round_: int) -> str:
    """Plan the round without memory if R5 did not answer in time."""
    return planning.plan_round(run_id, round_, None)


@shared_task(acks_late=True)
def evaluate_round(run_id: str, round_: int) -> str:
    """Run R4b's gate over a round whose outcomes are in."""
    return fanin.evaluate(run_id, round_)


@shared_task(acks_late=True)
def fanin_deadline(run_id: str, round_: int) -> str:
    """Judge a round at its fan-in deadline if it is still open."""
    return fanin.deadline_passed(run_id, round_)


@shared_task(acks_late=True)
def next_moves(run_id: str, final: dict) -> None:
    """Write R2's graceful failure after an abandon."""
    planning.write_next_moves(run_id, FinalResult.model_validate(final))


@shared_task
def expire_stuck_runs() -> int:
    """End runs that outlived their deadline (never hang)."""
    return watchdog.expire_stuck_runs()


@shared_task
def dream() -> dict:
    """Run one Dreamer pass (memory worker only)."""
    return memory_worker.dream()


@shared_task
def memory_summary() -> dict:
    return memory_worker.summary()


@shared_task
def memory_groups(space: str | None = None) -> list[dict]:
    return memory_worker.groups(space)


@shared_task
def memory_forget(prefix: str) -> int:
    return memory_worker.forget(prefix)


def dream_soon() -> None:
    """Schedule one Dreamer pass shortly after a run ends (debounced)."""
    try:
        if redisconn.client().set(
            "artoo.dream.pending", "1", nx=True, ex=DREAM_DEBOUNCE_S
        ):
            dream.apply_async(countdown=DREAM_DEBOUNCE_S, queue="memory")
    except Exception:
        # The 5-minute schedule still runs the Dreamer; a missed nudge is harmless.
        logging.getLogger(__name__).warning("dream nudge failed", exc_info=True)
