"""Compute decay and the dual-channel potentials of MKCT memory (paper §6.4).

``M_att = Σ |f|·e^(−kΔt)`` and ``M_dec = Σ σ·f·e^(−kΔt)``, with Δt in
fractional days from the later of creation and last recall.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from roles.contracts import Action, Potentials

from .owners import can_read
from .records import created_ts, pair_summaries, recall_ts

SECONDS_PER_DAY = 86400.0
IGNORE_BELOW = 0.5
DECISION_BAND = 0.2
GC_BELOW = 0.1


def decay(k: float, origin_ts: float, now_ts: float) -> float:
    """Return ``e^(−kΔt)`` for Δt in days from ``origin_ts`` to ``now_ts``.

    A Megram stamped after ``now`` (clock skew) counts at full strength rather
    than being amplified above its initial stimulus.
    """
    days = (now_ts - origin_ts) / SECONDS_PER_DAY
    return math.exp(-k * days) if days > 0.0 else 1.0


def live_weight(rec: Mapping[str, Any], recalled: float | None, now_ts: float) -> float:
    """Return a record's recall-aware decay factor at ``now_ts``."""
    origin = created_ts(rec)
    if recalled is not None and recalled > origin:
        origin = recalled
    return decay(rec["k"], origin, now_ts)


def derive_action(attention: float, decision: float) -> Action:
    """Map the two channels to Ignore, Exploit, Avoid or Caution."""
    if attention < IGNORE_BELOW:
        return "Ignore"
    if decision > DECISION_BAND:
        return "Exploit"
    if decision < -DECISION_BAND:
        return "Avoid"
    return "Caution"


def sums(
    records: Iterable[Mapping[str, Any]],
    recalls: Mapping[str, float | None],
    now_ts: float,
) -> tuple[float, float]:
    """Return the (attention, decision) sums of records at ``now_ts``."""
    attention = decision = 0.0
    for rec in records:
        w = live_weight(rec, recalls.get(rec["id"]), now_ts)
        attention += abs(rec["f"]) * w
        decision += rec["sigma"] * rec["f"] * w
    return attention, decision


def summary_sums(
    db: Any, space: str, entity: str, now_ts: float, reader: str | None = None
) -> tuple[float, float]:
    """Return a pair's (attention, decision) from the summaries ``reader`` sees."""
    attention = decision = 0.0
    for mid, created, f, sigma, k, owner in pair_summaries(db, space, entity):
        if not can_read(reader, space, owner):
            continue
        recalled = recall_ts(db, mid)
        origin = created if recalled is None or recalled < created else recalled
        w = decay(k, origin, now_ts)
        attention += abs(f) * w
        decision += sigma * f * w
    return attention, decision


def potentials(attention: float, decision: float) -> Potentials:
    """Return the Potentials of two channel sums with their action."""
    return Potentials.model_construct(
        attention=attention,
        decision=decision,
        action=derive_action(attention, decision),
    )
