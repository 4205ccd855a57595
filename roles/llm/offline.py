"""The offline model: deterministic stand-in for an LLM, honest about it.

Each non-empty line of a task is a shell command and becomes one subtask (a line
starting with ``& `` runs in parallel with the previous one); ``# expect: <regex>``
at the end of a line asks that the output match. Roles receive an
``OfflineModel`` instead of an ``LLMClient`` when no LLM is configured and take
their deterministic path.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class OfflineModel:
    """Marker for the offline path, with an optional simulated latency per call."""

    latency_ms: int = 0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def pause(self) -> None:
        """Simulate one model call's latency."""
        if self.latency_ms > 0:
            self.sleep(self.latency_ms / 1000)


SIGNAL_VERBS = {"Best Practice": "Prefer", "Constraint": "Avoid"}
RULE_CONTENT_CHARS = 160


def distil(
    space: str, entity: str, signal: str, valence: float, contents: Sequence[str]
) -> str:
    """Return a one- or two-sentence rule from the most frequent content.

    ``signal`` is ``"Best Practice"`` or ``"Constraint"``; ties between contents
    go to the one listed first (the Dreamer lists the newest first).
    """
    verb = SIGNAL_VERBS.get(signal)
    if verb is None:
        allowed = ", ".join(sorted(SIGNAL_VERBS))
        raise ValueError(f"signal must be one of {allowed}, got {signal!r}")
    subject = space.partition(":")[2] or space
    cleaned = [" ".join(str(c).split()) for c in contents]
    cleaned = [c for c in cleaned if c]
    outcome = "worked" if verb == "Prefer" else "failed"
    if not cleaned:
        return f"{verb} the approach that {outcome} for {subject} on {entity}."
    counts = Counter(cleaned)
    top = max(cleaned, key=lambda c: counts[c])
    seen = counts[top]
    if len(top) > RULE_CONTENT_CHARS:
        top = top[:RULE_CONTENT_CHARS].rstrip() + "…"
    end = "" if top.endswith((".", "!", "?", "…")) else "."
    return (
        f"{verb} the approach that {outcome} for {subject} on {entity}: {top}{end} "
        f"Seen in {seen} of {len(cleaned)} experiences "
        f"(valence {valence:+.1f})."
    )
