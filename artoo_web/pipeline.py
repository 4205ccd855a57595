"""The pipeline's entry points: load, call the role, persist, send."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from artoo_web.models import Run, RunStatus, TraceEvent

log = logging.getLogger(__name__)

_starter: Callable[[Run], None] | None = None


def set_starter(fn: Callable[[Run], None]) -> None:
    """Register the function that takes a queued run's first step (R1)."""
    global _starter
    _starter = fn


def submit(owner, raw_input: str) -> Run:
    """Create a queued run and enqueue its first step on commit."""
    from artoo_web.tasks import start_run

    with transaction.atomic():
        run = Run.objects.create(owner=owner, raw_input=raw_input)
        TraceEvent.objects.create(
            run=run, role="User", kind="submitted", data={"chars": len(raw_input)}
        )
        transaction.on_commit(
            lambda: start_run.apply_async(args=[str(run.id)], queue="pipeline")
        )
    return run


def start(run_id: str) -> str:
    """Hand a queued run to the registered starter; a taken run is a no-op."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return "missing"
    if run.status != RunStatus.QUEUED:
        return "already-started"
    if _starter is None:
        # Until R1 is wired in, the run waits in the queue, visible as such.
        log.info("pipeline: no starter registered; run %s stays queued", run_id)
        return "no-starter"
    _starter(run)
    return "started"
