"""The run header: status, elapsed time, and model calls, tokens and cost per role."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from artoo_web.models import Run
from artoo_web.summaries import usage_by_role
from roles.ggs.control import STRATEGIES


def elapsed_s(run: Run, now: datetime | None = None) -> int:
    end = run.finished_at or now or timezone.now()
    return max(0, int((end - run.created_at).total_seconds()))


def header_context(run: Run) -> dict:
    usage = usage_by_role(run)
    return {
        "usage": usage,
        "usage_tokens": sum(u["tokens"] for u in usage.values()),
        "usage_calls": sum(u["calls"] for u in usage.values()),
        "elapsed_s": elapsed_s(run),
        "control_label": control_label(run.control),
    }


def control_label(name: str) -> str:
    """Return what the run's control strategy does, in a few words."""
    strategy = STRATEGIES.get(name)
    return strategy.label if strategy else name
