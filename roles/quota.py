"""Per-user limits on submitting runs: how many are active, how many a minute.

A submission over a limit is refused with what limit it met and when to try
again; 0 turns a limit off::

    refusal(active=20, recent=[...], now=..., max_active=20, per_minute=30)
    → Refusal(limit="active_runs", retry_after_s=30,
              message="Too many active runs: 20 of 20 allowed; …")
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW_S = 60
# A finished run frees a place; how soon one will is unknown, so ask again soon.
ACTIVE_RETRY_S = 30

ACTIVE_RUNS = "active_runs"
RUNS_PER_MINUTE = "runs_per_minute"


@dataclass(frozen=True)
class Refusal:
    """A refused submission: the limit it met, a sentence, and when to retry."""

    limit: str
    message: str
    retry_after_s: int


def refusal(
    active: int,
    recent: Sequence[float],
    now: float,
    *,
    max_active: int,
    per_minute: int,
) -> Refusal | None:
    """Return why one more run may not be submitted now, or None when it may.

    ``active`` counts the user's runs not finished; ``recent`` holds the
    submission times (seconds) of their runs, ``now`` on the same clock.
    """
    if max_active > 0 and active >= max_active:
        return Refusal(
            ACTIVE_RUNS,
            f"Too many active runs: {active} of {max_active} allowed; "
            "submit again when one of them has finished.",
            ACTIVE_RETRY_S,
        )
    if per_minute <= 0:
        return None
    window = sorted(t for t in recent if now - t < WINDOW_S)
    if len(window) < per_minute:
        return None
    # The place frees when enough of the window's oldest submissions age out.
    frees_at = window[len(window) - per_minute] + WINDOW_S
    wait = max(1, math.ceil(frees_at - now))
    return Refusal(
        RUNS_PER_MINUTE,
        f"Too many runs submitted in the last minute: {len(window)} of "
        f"{per_minute} allowed; submit again in {wait} s.",
        wait,
    )
