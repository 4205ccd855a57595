"""The run dashboard's read model and its fragments.

Each part of the dashboard is one partial of ``artoo_web/run_detail.html`` whose
outer element carries a stable id (``PARTS``), and one module of this package
builds its context. The page renders every part; the websocket re-renders the
parts a message affects (``parts_for``) and pushes them as ``swaps``: element id →
html. Both roads go through ``render_parts``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.template.loader import render_to_string

from artoo_web.dashboard.audit import audit_context
from artoo_web.dashboard.final import final_context
from artoo_web.dashboard.header import elapsed_s, header_context
from artoo_web.dashboard.lanes import lane_rounds, lanes_context
from artoo_web.dashboard.messages import SUMMARIES, bus_page, decorate, summarise
from artoo_web.dashboard.prompts import prompts_context
from artoo_web.dashboard.timeline import chart_context, timeline_context, timeline_rows
from artoo_web.models import Run

__all__ = [
    "AFFECTS",
    "PARTS",
    "SUMMARIES",
    "TEMPLATE",
    "bus_page",
    "context_for",
    "decorate",
    "elapsed_s",
    "lane_rounds",
    "parts_for",
    "render_parts",
    "summarise",
    "timeline_rows",
]

TEMPLATE = "artoo_web/run_detail.html"
# Element id → partial name.
PARTS = {
    "run-header": "header",
    "ggs-timeline": "timeline",
    "loss-chart": "chart",
    "lanes": "lanes",
    "prompts": "prompts",
    "final-result": "final",
    "audit-panel": "audit",
}
_LANES = ("lanes",)
_PROMPTS = ("prompts",)
_DECISION = ("ggs-timeline", "loss-chart")
AFFECTS: dict[str, tuple[str, ...]] = {
    "PlanDirective": _DECISION,
    "FinalResult": (*_DECISION, "final-result", "prompts"),
    "MemoryRecall": ("ggs-timeline",),
    "DispatchManifest": ("ggs-timeline", *_LANES),
    "SubTask": _LANES,
    "ExecutionResult": _LANES,
    "CorrectionSignal": _LANES,
    "SubTaskOutcome": _LANES,
    "ApprovalRequest": _PROMPTS,
    "ApprovalDecision": _PROMPTS,
    "ClarificationRequest": _PROMPTS,
    "ClarificationAnswer": _PROMPTS,
    "NextMoves": ("final-result",),
    "DirectResponse": ("final-result",),
    "AuditQuery": ("audit-panel",),
    "AuditReport": ("audit-panel",),
}
BUILDERS: dict[str, Callable[[Run], dict]] = {
    "run-header": header_context,
    "ggs-timeline": timeline_context,
    "loss-chart": chart_context,
    "lanes": lanes_context,
    "prompts": prompts_context,
    "final-result": final_context,
    "audit-panel": audit_context,
}


def parts_for(type_: str) -> tuple[str, ...]:
    """Return the element ids a message of this type changes (header always)."""
    return ("run-header", *AFFECTS.get(type_, ()))


def context_for(run: Run, parts: Iterable[str] = PARTS) -> dict:
    """Return the template context the given parts need."""
    context: dict = {"run": run}
    for part in parts:
        context.update(BUILDERS[part](run))
    return context


def render_parts(run_id, parts: Iterable[str], extra: dict | None = None) -> dict:
    """Return element id → freshly rendered html for each part of a run."""
    parts = [p for p in dict.fromkeys(parts) if p in PARTS]
    run = Run.objects.filter(id=run_id).first()
    if run is None or not parts:
        return {}
    context = {**context_for(run, parts), **(extra or {})}
    return {
        part: render_to_string(f"{TEMPLATE}#{PARTS[part]}", context) for part in parts
    }
