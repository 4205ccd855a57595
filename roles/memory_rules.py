"""Memory's rules for the tool layer: (tool, target) pairs to refuse or to confirm.

R5 reads them from the ``tool:<name>`` / ``target:<value>`` Megrams of failing
calls (``roles.memory_contracts.TargetSignal``); R2's round keeps them in the
run state. A call matches a pair when its tool is the pair's and its target,
read as the evidence reads it (``roles.claims.evidence.first_target``), is the pair's
target. An Avoid pair is refused like a GGS blocked target; a Caution pair is
put to the operator through Law 1's approval path before it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from roles.claims.evidence import TARGET_LIMIT, first_target
from roles.memory_contracts import TargetSignal

Pair = tuple[str, str]


@dataclass(frozen=True)
class MemoryRules:
    """The pairs memory says to avoid and to confirm, each with the reason."""

    avoid: Mapping[Pair, str] = field(default_factory=dict)
    caution: Mapping[Pair, str] = field(default_factory=dict)

    @classmethod
    def of(cls, signals: Iterable[TargetSignal]) -> MemoryRules:
        """Return the rules of R5's target signals."""
        avoid, caution = {}, {}
        for signal in signals:
            table = avoid if signal.action == "Avoid" else caution
            table[(signal.tool, signal.target)] = reason(signal)
        return cls(avoid=avoid, caution=caution)


def pair_of(name: str, args: Any) -> Pair:
    """Return the (tool, target) of a call as memory files it."""
    target = first_target(args, TARGET_LIMIT) if isinstance(args, dict) else ""
    return (name, target)


def reason(signal: TargetSignal) -> str:
    """Return the text naming the memory entry behind a signal."""
    entry = f"memory {signal.action} for tool:{signal.tool} / target:{signal.target}"
    details = [f"decision {signal.decision:+.2f}"]
    if signal.megram_id:
        details.insert(0, f"Megram {signal.megram_id[:8]}")
    why = " ".join(signal.content.split())
    text = f"{entry} ({', '.join(details)})"
    return f"{text}: {why}" if why else text
