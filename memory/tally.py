"""What one Dreamer scan keeps of a pair: sums by owner, rules, sources.

Memory grows with pairs and owners, not with Megrams: each open group keeps
its two sums, its newest creation time and at most ``4·MAX_SOURCES`` contents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from roles.memory_contracts import MAX_RUNS

from . import records

CONSOLIDATE_ATTENTION = 5.0
CONSOLIDATE_DECISION = 3.0
MAX_SOURCES = 10
DECAYING = ("M", "K")


def signal_of(attention: float, decision: float) -> str | None:
    """Return "Best Practice", "Constraint" or None for a group's sums."""
    if attention < CONSOLIDATE_ATTENTION:
        return None
    if decision >= CONSOLIDATE_DECISION:
        return "Best Practice"
    if decision <= -CONSOLIDATE_DECISION:
        return "Constraint"
    return None


@dataclass
class Group:
    """One owner's open M/K Megrams of a pair: sums, the newest creation time,
    and the newest non-empty contents (the distil call's sources)."""

    attention: float = 0.0
    decision: float = 0.0
    horizon: float = -math.inf
    newest: list[tuple[float, str, str, tuple[str, ...]]] = field(default_factory=list)

    def add(self, rec: dict[str, Any], created: float, weight: float) -> None:
        self.attention += abs(rec["f"]) * weight
        self.decision += rec["sigma"] * rec["f"] * weight
        self.horizon = max(self.horizon, created)
        if rec["content"].strip():
            runs = tuple(rec.get("runs") or ())
            self.newest.append((created, rec["id"], rec["content"], runs))
            if len(self.newest) > 4 * MAX_SOURCES:
                self._trim()

    def sources(self) -> list[str]:
        """Return the newest ``MAX_SOURCES`` contents, newest first."""
        self._trim()
        return [content for _, _, content, _ in self.newest]

    def source_runs(self) -> list[str]:
        """Return the runs the sources rest on, newest first, each once."""
        self._trim()
        runs = (run for *_, named in self.newest for run in named)
        return list(dict.fromkeys(runs))[:MAX_RUNS]

    def _trim(self) -> None:
        # Newest first; of equal times, the lower id first (the index's order).
        self.newest.sort(key=lambda e: (-e[0], e[1]))
        del self.newest[MAX_SOURCES:]


@dataclass
class Tally:
    """Per-pair sums gathered in the scan, by owner (rules are kept individually)."""

    decision_rest: dict[str, float] = field(default_factory=dict)
    open_groups: dict[str, Group] = field(default_factory=dict)
    rules: list[tuple[dict[str, Any], float]] = field(default_factory=list)

    def add_rest(self, owner: str, signed: float) -> None:
        self.decision_rest[owner] = self.decision_rest.get(owner, 0.0) + signed

    def add_open(
        self, rec: dict[str, Any], owner: str, created: float, weight: float
    ) -> None:
        if rec["level"] in DECAYING and rec["state"] != records.CONSOLIDATED:
            group = self.open_groups.get(owner)
            if group is None:
                group = self.open_groups[owner] = Group()
            group.add(rec, created, weight)

    def candidates(self) -> list[str]:
        """Return the owners whose open Megrams of the pair call for a rule."""
        return sorted(
            owner
            for owner, group in self.open_groups.items()
            if signal_of(group.attention, group.decision) is not None
        )
