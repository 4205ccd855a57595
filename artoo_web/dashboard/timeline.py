"""The GGS timeline, one row per decision with its memory recall, and the loss chart."""

from __future__ import annotations

import uuid
from collections import Counter

from artoo_web import charts
from artoo_web.dashboard.messages import ROUNDS_SHOWN
from artoo_web.models import BusMessage, Run, TraceEvent
from artoo_web.summaries import round_entry
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


def recall_view(
    recall: MemoryRecall | None,
    unavailable: bool,
    own_runs: frozenset[str] = frozenset(),
) -> dict | None:
    """Return what the timeline shows of a round's recall; each recalled
    Megram names the runs it rests on, of those ``own_runs`` holds."""
    if recall is None and not unavailable:
        return None
    if unavailable or not recall.available:
        return {"available": False}
    return {
        "items": [
            {
                "level": m.level,
                "state": m.state,
                "id": m.id[:8],
                "runs": [r for r in m.runs if r in own_runs],
            }
            for m in [*recall.sops, *recall.recent]
        ],
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


def _memory_by_round(run: Run, rounds: set[int] | None) -> dict[int, dict | None]:
    """Return the memory recall of each round (of ``rounds``, when given)."""
    messages = BusMessage.objects.filter(run=run, type="MemoryRecall").order_by("id")
    if rounds is not None:
        messages = messages.filter(round__in=rounds)
    recalls = {m.round: read_payload(m.type, m.payload) for m in messages}
    missing = {
        int(r)
        for r in TraceEvent.objects.filter(
            run=run, kind="memory_unavailable"
        ).values_list("data__round", flat=True)
        if r is not None
    }
    rounds = set(recalls) | missing
    own = _own_runs(run, recalls.values())
    return {r: recall_view(recalls.get(r), r in missing, own) for r in rounds}


def _own_runs(run: Run, recalls) -> frozenset[str]:
    """Return the runs, of those the recalls name, that are the run owner's."""
    named = {
        r for recall in recalls for m in [*recall.sops, *recall.recent] for r in m.runs
    }
    if not named:
        return frozenset()
    valid = [r for r in named if _is_uuid(r)]
    mine = Run.objects.filter(owner_id=run.owner_id, id__in=valid)
    return frozenset(str(i) for i in mine.values_list("id", flat=True))


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _decisions(run: Run):
    return BusMessage.objects.filter(
        run=run, sender="R7", type__in=("PlanDirective", "FinalResult")
    )


def timeline_rows(run: Run, shown: int | None = None) -> list[dict]:
    """Return one row per GGS decision (the newest ``shown`` ones, when given),
    plus the round still in progress."""
    if shown is None:
        entries = [round_entry(m) for m in _decisions(run).order_by("id")]
        rounds = None
    else:
        newest = list(_decisions(run).order_by("-id")[:shown])
        entries = [round_entry(m) for m in reversed(newest)]
        rounds = {judged_round(e) for e in entries} | {run.round}
    memory = _memory_by_round(run, rounds)
    rows = []
    for entry in entries:
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


def folded_decisions(run: Run, rows: list[dict]) -> dict | None:
    """Return the decisions before the shown ``rows`` as one line's figures."""
    decided = [r for r in rows if not r["pending"]]
    if len(decided) < ROUNDS_SHOWN:
        return None
    old = list(
        _decisions(run)
        .filter(id__lt=decided[0]["message_id"])
        .order_by("id")
        .values_list("round", "payload__directive")
    )
    if not old:
        return None
    judged = [judged_round({"round": r, "directive": d}) for r, d in old]
    return {
        "first": judged[0],
        "last": judged[-1],
        "decisions": len(old),
        "directives": Counter(str(d) for _, d in old).most_common(),
    }


def timeline_context(run: Run) -> dict:
    rows = timeline_rows(run, ROUNDS_SHOWN)
    return {"timeline": rows, "timeline_folded": folded_decisions(run, rows)}


def chart_context(run: Run) -> dict:
    rows = timeline_rows(run, ROUNDS_SHOWN)
    decided = [row for row in rows if not row["pending"]]
    return {
        "chart": charts.loss_chart(decided),
        "chart_folded": folded_decisions(run, rows),
        "chart_rounds": len(decided),
    }
