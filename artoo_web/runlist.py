"""The run list's read model: the rows a user sees, and one row as html.

The page and the live stream render the same partial (``ROW``), each row an
element ``id="run-<id>"``; the stream sends a row again whenever the run
changes (``artoo_web.runfeed``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone

from artoo_web.dashboard import elapsed_s
from artoo_web.models import TERMINAL_STATUSES, Run, RunStatus

LIMIT = 200
ROW = "artoo_web/run_list.html#run-row"
# Rows changed this long before a client's ``since`` are sent again on connect:
# the workers' clocks may run a little behind the web process's.
CLOCK_SLACK_S = 5


def listed(user, status: str = "") -> list[Run]:
    """Return the newest runs ``user`` may see, of one status when it is known."""
    runs = Run.objects.visible_to(user).select_related("owner")
    if status in RunStatus.values:
        runs = runs.filter(status=status)
    return timed(list(runs[:LIMIT]))


def changed_since(user, since: datetime) -> list[Run]:
    """Return the runs ``user`` sees that changed since ``since`` or are active.

    An active run's tokens and cost change without touching ``updated_at``.
    """
    cutoff = since - timedelta(seconds=CLOCK_SLACK_S)
    runs = Run.objects.visible_to(user).filter(
        Q(updated_at__gte=cutoff) | ~Q(status__in=TERMINAL_STATUSES)
    )
    return timed(list(runs[:LIMIT]))


def row_of(user, run_id) -> Run | None:
    """Return one run ``user`` may see, ready to render, or None."""
    try:
        run = Run.objects.visible_to(user).filter(id=run_id).first()
    except (ValueError, ValidationError):
        return None
    return None if run is None else timed([run])[0]


def timed(runs: list[Run]) -> list[Run]:
    now = timezone.now()
    for run in runs:
        run.elapsed_s = elapsed_s(run, now)
    return runs


def render_row(run: Run) -> str:
    return render_to_string(ROW, {"run": run})
