"""The sequence lanes: per round, per sequence group, one card per subtask."""

from __future__ import annotations

from artoo_web.dashboard.output import exit_code, output_text
from artoo_web.models import BusMessage, Run


def _criteria(subtask: dict, outcome: dict | None) -> list[dict]:
    verdicts = {
        v.get("criterion"): v for v in (outcome or {}).get("criteria_verdicts", [])
    }
    rows = []
    for spec in subtask.get("success_criteria", []):
        text = spec if isinstance(spec, str) else spec.get("criterion", "")
        verdict = verdicts.pop(text, None) or {}
        rows.append({"criterion": text, **verdict, "verdict": verdict.get("verdict")})
    rows.extend(verdicts.values())
    return rows


def _attempt(payload: dict) -> dict:
    return {
        **payload,
        "text": output_text(payload.get("output")),
        "exit_code": exit_code(payload.get("output")),
    }


def lane_rounds(run: Run) -> list[dict]:
    """Return rounds, newest first, each with its sequence groups of cards."""
    rows = BusMessage.objects.filter(
        run=run,
        type__in=("SubTask", "ExecutionResult", "CorrectionSignal", "SubTaskOutcome"),
    ).order_by("id")
    cards: dict[str, dict] = {}
    for m in rows:
        sid = str(m.payload.get("subtask_id", ""))
        if m.type == "SubTask":
            cards[sid] = {
                "subtask": m.payload,
                "round": m.round,
                "attempts": [],
                "corrections": [],
                "outcome": None,
            }
        elif sid in cards:
            card = cards[sid]
            if m.type == "ExecutionResult":
                card["attempts"].append(_attempt(m.payload))
            elif m.type == "CorrectionSignal":
                card["corrections"].append(m.payload)
            else:
                card["outcome"] = m.payload
    rounds: dict[int, dict[int, list]] = {}
    for sid, card in cards.items():
        card["id"] = sid
        card["criteria"] = _criteria(card["subtask"], card["outcome"])
        seq = int(card["subtask"].get("sequence", 1) or 1)
        rounds.setdefault(card["round"], {}).setdefault(seq, []).append(card)
    return [
        {"round": r, "groups": [{"sequence": s, "cards": g[s]} for s in sorted(g)]}
        for r, g in sorted(rounds.items(), reverse=True)
    ]


def lanes_context(run: Run) -> dict:
    return {"lane_rounds": lane_rounds(run)}
