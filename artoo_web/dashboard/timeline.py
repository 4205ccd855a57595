"""The GGS timeline, one row per decision with its memory recall, and the loss chart."""

from __future__ import annotations

from artoo_web import charts
from artoo_web.models import BusMessage, Run, TraceEvent
from artoo_web.summaries import rounds_of
from roles.contracts import Loss, MemoryRecall, read_payload

FLAT_GRADIENT = 1e-3
# The loss terms (D, P, Omega, L) of a decision whose loss cannot be read.
NO_LOSS = dict.fromkeys(Loss.model_fields)


def arrow(grad_l: float) -> tuple[str, str]:
    """Return the arrow and its words for a loss gradient (negative improves)."""
    if grad_l < -FLAT_GRADIENT:
        return "↓", "improving"
    if grad_l > FLAT_GRADIENT:
        return "↑", "worsening"
    return "→", "flat"


def judged_round(entry: dict) -> int:
    # R7 bumps the run's round before sending a PlanDirective: it judges the
    # round before it. A FinalResult carries the round it judged.
    if entry["directive"] in ("accept", "success", "abandon"):
        return entry["round"]
    return max(0, entry["round"] - 1)


def recall_view(recall: MemoryRecall | None, unavailable: bool) -> dict | None:
    if recall is None and not unavailable:
        return None
    if unavailable or not recall.available:
        return {"available": False}
    return {
        "available": True,
        "action": recall.action,
        "attention": recall.attention,
        "decision": recall.decision,
        "constraints": recall.constraints,
        "sops": len(recall.sops),
        "recent": len(recall.recent),
        "space": recall.space or "",
        "entity": recall.entity or "",
    }


def _memory_by_round(run: Run) -> dict[int, dict | None]:
    recalls = {
        m.round: read_payload(m.type, m.payload)
        for m in BusMessage.objects.filter(run=run, type="MemoryRecall").order_by("id")
    }
    missing = {
        int(r)
        for r in TraceEvent.objects.filter(
            run=run, kind="memory_unavailable"
        ).values_list("data__round", flat=True)
        if r is not None
    }
    rounds = set(recalls) | missing
    return {r: recall_view(recalls.get(r), r in missing) for r in rounds}


def timeline_rows(run: Run) -> list[dict]:
    """Return one row per GGS decision, plus the round still in progress."""
    memory = _memory_by_round(run)
    rows = []
    for entry in rounds_of(run):
        judged = judged_round(entry)
        grad = float(entry["grad_l"])
        symbol, words = arrow(grad)
        rows.append(
            {
                **entry,
                **(entry["loss"] or NO_LOSS),
                "judged": judged,
                "grad_l": grad,
                "arrow": symbol,
                "trend": words,
                "memory": memory.get(judged),
                "pending": False,
            }
        )
    judged = {r["judged"] for r in rows}
    if not run.is_terminal and run.round not in judged and run.task_id:
        rows.append(
            {
                "judged": run.round,
                "pending": True,
                "transition": f"{run.directive or 'init'}→…",
                "memory": memory.get(run.round),
            }
        )
    return rows


def decided_rows(run: Run) -> list[dict]:
    return [row for row in timeline_rows(run) if not row["pending"]]


def timeline_context(run: Run) -> dict:
    return {"timeline": timeline_rows(run)}


def chart_context(run: Run) -> dict:
    return {"chart": charts.loss_chart(decided_rows(run))}
