"""Read models over a run's records: GGS rounds and cost per role."""

from __future__ import annotations

from django.db.models import Count, Sum

from artoo_web.models import BusMessage, Run, TraceEvent
from roles.contracts import PlanDirective, read_payload


def rounds_of(run: Run) -> list[dict]:
    """Return one entry per GGS decision: transition, loss, gradient, rationale."""
    rows = BusMessage.objects.filter(
        run=run, sender="R7", type__in=("PlanDirective", "FinalResult")
    ).order_by("id")
    return [round_entry(m) for m in rows]


def round_entry(msg: BusMessage) -> dict:
    """Return the entry of one GGS decision, its payload read through the contract."""
    decision = read_payload(msg.type, msg.payload)
    # Only a PlanDirective blocks tools and targets for the next round.
    plan = decision if isinstance(decision, PlanDirective) else None
    return {
        "round": msg.round,
        "message_id": msg.id,
        "transition": f"{decision.prev_directive}→{decision.directive}",
        "prev_directive": decision.prev_directive,
        "directive": decision.directive,
        "loss": decision.loss.model_dump() if decision.loss else None,
        "grad_l": decision.grad_l or 0.0,
        "rationale": decision.rationale,
        "blocked_tools": plan.blocked_tools if plan else [],
        "blocked_targets": plan.blocked_targets if plan else [],
    }


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
