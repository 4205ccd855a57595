"""The last line of "never hang": runs past their deadline are ended by GGS's rule."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from artoo_web.models import TERMINAL_STATUSES, ApprovalStatus, Run, RunStatus
from artoo_web.runs import abandon

log = logging.getLogger(__name__)


def expire_stuck_runs() -> int:
    """Abandon every active run older than the deadline (human waits excluded)."""
    cutoff = timezone.now() - timedelta(seconds=settings.ARTOO_RUN_DEADLINE_S)
    count = 0
    stale = Run.objects.exclude(status__in=TERMINAL_STATUSES).filter(
        created_at__lt=cutoff
    )
    for run_id in stale.values_list("id", flat=True):
        count += expire(run_id, cutoff)
    return count


def expire(run_id, cutoff) -> int:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        waiting = (
            run.status in (RunStatus.NEEDS_INPUT,)
            or run.approvals.filter(status=ApprovalStatus.PENDING).exists()
        )
        overdue = run.created_at + timedelta(milliseconds=run.human_wait_ms) < cutoff
        if run.is_terminal or waiting or not overdue:
            return 0
        abandon(
            run,
            "Abandoned: the run passed its deadline without a verdict "
            f"(status was {run.status}).",
            "run deadline exceeded",
            RunStatus.FAILED,
            "It was still unfinished at its time limit "
            f"({settings.ARTOO_RUN_DEADLINE_S} s), so it was stopped.",
        )
    log.warning("watchdog: run %s abandoned at its deadline", run_id)
    return 1
