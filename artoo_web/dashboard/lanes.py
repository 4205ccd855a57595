"""The sequence lanes: per round, per sequence group, one card per subtask.

A card holds the subtask's messages read through their contracts: ``subtask``
(SubTask), ``attempts`` (ExecutionResult fields plus display text and exit
code), ``corrections`` (CorrectionSignal), ``outcome`` (SubTaskOutcome or None),
and ``criteria``: one row per criterion with its verdict, when there is one.
"""

from __future__ import annotations

from collections import Counter

from artoo_web.dashboard.messages import ROUNDS_SHOWN
from artoo_web.dashboard.output import exit_code, output_text
from artoo_web.models import BusMessage, Run
from roles.contracts import (
    CriterionVerdict,
    ExecutionResult,
    SubTask,
    SubTaskOutcome,
    read_payload,
)


def _criterion_row(text: str, verdict: CriterionVerdict | None) -> dict:
    if verdict is None:
        return {"criterion": text, "verdict": None}
    return {**dict(verdict), "criterion": text}


def _criteria(subtask: SubTask, outcome: SubTaskOutcome | None) -> list[dict]:
    verdicts = {v.criterion: v for v in (outcome.criteria_verdicts if outcome else [])}
    rows = []
    for spec in subtask.success_criteria:
        text = spec if isinstance(spec, str) else spec.criterion
        rows.append(_criterion_row(text, verdicts.pop(text, None)))
    rows.extend(_criterion_row(v.criterion, v) for v in verdicts.values())
    return rows


def _attempt(result: ExecutionResult) -> dict:
    return {
        **dict(result),
        "text": output_text(result.output),
        "exit_code": exit_code(result.output),
    }


LANE_TYPES = ("SubTask", "ExecutionResult", "CorrectionSignal", "SubTaskOutcome")


def lane_rounds(run: Run, since: int = 0) -> list[dict]:
    """Return rounds from ``since`` on, newest first, with their groups of cards."""
    rows = BusMessage.objects.filter(
        run=run, type__in=LANE_TYPES, round__gte=since
    ).order_by("id")
    cards: dict[str, dict] = {}
    for m in rows:
        payload = read_payload(m.type, m.payload)
        sid = str(payload.subtask_id or "")
        if m.type == "SubTask":
            cards[sid] = {
                "subtask": payload,
                "round": m.round,
                "attempts": [],
                "corrections": [],
                "outcome": None,
            }
        elif sid in cards:
            card = cards[sid]
            if m.type == "ExecutionResult":
                card["attempts"].append(_attempt(payload))
            elif m.type == "CorrectionSignal":
                card["corrections"].append(payload)
            else:
                card["outcome"] = payload
    rounds: dict[int, dict[int, list]] = {}
    for sid, card in cards.items():
        card["id"] = sid
        card["criteria"] = _criteria(card["subtask"], card["outcome"])
        seq = card["subtask"].sequence
        rounds.setdefault(card["round"], {}).setdefault(seq, []).append(card)
    return [
        {"round": r, "groups": [{"sequence": s, "cards": g[s]} for s in sorted(g)]}
        for r, g in sorted(rounds.items(), reverse=True)
    ]


def shown_since(run: Run) -> int:
    """Return the oldest round the lanes show in full (0 when none is folded)."""
    rounds = list(
        BusMessage.objects.filter(run=run, type="SubTask")
        .values_list("round", flat=True)
        .distinct()
        .order_by("-round")[: ROUNDS_SHOWN + 1]
    )
    return rounds[ROUNDS_SHOWN - 1] if len(rounds) > ROUNDS_SHOWN else 0


def folded_lanes(run: Run, before: int) -> dict | None:
    """Return the rounds before ``before`` as one line's figures, or None."""
    if not before:
        return None
    old = BusMessage.objects.filter(run=run, round__lt=before)
    subtasks = list(
        old.filter(type="SubTask").values_list("round", flat=True).order_by("round")
    )
    if not subtasks:
        return None
    # A card shows its subtask's last outcome; so does the count.
    last = dict(
        old.filter(type="SubTaskOutcome")
        .order_by("id")
        .values_list("payload__subtask_id", "payload__status")
    )
    statuses = Counter(str(s) for s in last.values())
    if len(subtasks) > len(last):
        statuses["pending"] = len(subtasks) - len(last)
    return {
        "first": subtasks[0],
        "last": subtasks[-1],
        "subtasks": len(subtasks),
        "statuses": statuses.most_common(),
    }


def lanes_context(run: Run) -> dict:
    since = shown_since(run)
    return {
        "lane_rounds": lane_rounds(run, since),
        "lanes_folded": folded_lanes(run, since),
    }
