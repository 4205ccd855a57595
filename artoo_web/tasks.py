"""Celery tasks: thin wrappers around the bus and the pipeline."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from artoo_web import bus, pipeline


@shared_task(acks_late=True)
def deliver(message_id: int) -> str:
    """Deliver one bus message to its recipient's handler (idempotent)."""
    return bus.deliver(message_id)


@shared_task
def sweep_outbox() -> int:
    """Re-enqueue messages whose delivery was lost."""
    return bus.sweep(settings.ARTOO_SWEEP_AFTER_S)


@shared_task(acks_late=True)
def start_run(run_id: str) -> str:
    """Take a queued run's first step."""
    return pipeline.start(run_id)
