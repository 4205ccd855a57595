"""Celery tasks: thin wrappers around the bus, the handlers and memory.

The only module that imports ``artoo_web.handlers``; everything else enqueues
these tasks by name through ``artoo_web.followups``. Nobody waits on the result
of a task marked ``ignore_result``, so none is stored; the memory tasks answer
the web process and the ``memory`` command.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from artoo_web import auditlog, bus, projects, runs, watchdog
from artoo_web.handlers import (
    HANDLERS,
    executor,
    memory,
    meta_validator,
    perceiver,
    planner,
)
from roles.contracts import FinalResult

log = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def deliver(message_id: int) -> str:
    """Deliver one bus message to its recipient's handler (idempotent)."""
    try:
        return bus.deliver(message_id, HANDLERS)
    except Exception as exc:
        return bus.handler_failed(message_id, exc, runs.give_up, projects.give_up)


@shared_task(ignore_result=True)
def sweep_outbox(after_outage: bool = False) -> int:
    """Re-enqueue messages whose delivery was lost, and runs whose start was.

    After a broker outage (a worker reconnected) the broker may have lost every
    delivery and start it held, so those are taken at any age, not only once
    they are ARTOO_SWEEP_AFTER_S old; the rounds' follow-ups keep their delay.
    """
    after = settings.ARTOO_SWEEP_AFTER_S
    lost = 0 if after_outage else after
    return (
        bus.sweep(lost, HANDLERS)
        + runs.restart_stalled(lost)
        + meta_validator.sweep_rounds(after)
        + planner.sweep_next_moves(after)
        + executor.sweep_approvals(after)
    )


@shared_task(acks_late=True, ignore_result=True)
def start_run(run_id: str) -> str:
    """Take a queued run's first step."""
    return perceiver.start(run_id)


@shared_task(acks_late=True, ignore_result=True)
def plan_without_memory(run_id: str, round_: int) -> str:
    """Plan the round without memory if R5 did not answer in time."""
    return planner.plan_round(run_id, round_, None)


@shared_task(acks_late=True, ignore_result=True)
def evaluate_round(run_id: str, round_: int) -> str:
    """Run R4b's gate over a round whose outcomes are in."""
    return meta_validator.evaluate(run_id, round_)


@shared_task(acks_late=True, ignore_result=True)
def fanin_deadline(run_id: str, round_: int) -> str:
    """Judge a round at its fan-in deadline if it is still open."""
    return meta_validator.deadline_passed(run_id, round_)


@shared_task(acks_late=True, ignore_result=True)
def expire_approval(approval_id: str) -> str:
    """Deny a Law 1 approval left unanswered, and resume its parked subtask."""
    return executor.expire(approval_id)


@shared_task(acks_late=True, ignore_result=True)
def next_moves(run_id: str, final: dict) -> None:
    """Write R2's graceful failure after an abandon."""
    planner.write_next_moves(run_id, FinalResult.model_validate(final))


@shared_task(ignore_result=True)
def expire_stuck_runs() -> int:
    """End runs that outlived their deadline (never hang)."""
    return watchdog.expire_stuck_runs()


@shared_task(ignore_result=True)
def verify_audit_chain() -> int:
    """Walk the whole audit chain; the audit page shows when and what it found."""
    count, broken = auditlog.verify_chain()
    if broken:
        log.error("audit chain broken: %s", broken)
    return count


@shared_task
def dream() -> dict:
    """Run one Dreamer pass (memory worker only)."""
    return memory.dream()


@shared_task
def memory_summary(reader: str | None = None) -> dict:
    return memory.summary(reader)


@shared_task
def memory_groups(space: str | None = None, reader: str | None = None) -> list[dict]:
    return memory.groups(space, reader)


@shared_task
def memory_forget(prefix: str) -> int:
    return memory.forget(prefix)
