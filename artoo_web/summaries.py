"""Read models over a run's records: GGS rounds and cost per role."""

from __future__ import annotations

from django.db.models import Count, Sum

from artoo_web.models import BusMessage, Run, TraceEvent


def rounds_of(run: Run) -> list[dict]:
    """Return one entry per GGS decision: transition, loss, gradient, rationale."""
    rows = BusMessage.objects.filter(
        run=run, sender="R7", type__in=("PlanDirective", "FinalResult")
    ).order_by("id")
    return [
        {
            "round": m.round,
            "message_id": m.id,
            "transition": "{}→{}".format(
                m.payload.get("prev_directive"), m.payload.get("directive")
            ),
            "prev_directive": m.payload.get("prev_directive"),
            "directive": m.payload.get("directive"),
            "loss": m.payload.get("loss"),
            "grad_l": m.payload.get("grad_l", 0.0),
            "rationale": m.payload.get("rationale", ""),
            "blocked_tools": m.payload.get("blocked_tools", []),
            "blocked_targets": m.payload.get("blocked_targets", []),
        }
        for m in rows
    ]


def usage_by_role(run: Run) -> dict[str, dict]:
    """Return calls, tokens and cost per role from the run's model-call traces."""
    rows = (
        TraceEvent.objects.filter(run=run, kind="llm_call")
        .values("role")
        .annotate(calls=Count("id"), tokens=Sum("tokens"))
        .order_by("role")
    )
    costs: dict[str, float] = {}
    for event in TraceEvent.objects.filter(run=run, kind="llm_call").only(
        "role", "data"
    ):
        costs[event.role] = costs.get(event.role, 0.0) + float(
            event.data.get("cost_usd") or 0
        )
    return {
        r["role"]: {
            "calls": r["calls"],
            "tokens": r["tokens"] or 0,
            "cost_usd": round(costs.get(r["role"], 0.0), 6),
        }
        for r in rows
    }
