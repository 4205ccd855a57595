"""Time spent waiting on a person, counted once however many waits overlap.

Approvals of parallel subtasks wait side by side, a clarification waits alone;
what a run lost to people is the union of those intervals, not their sum::

    10:00:00–10:00:10 and 10:00:05–10:00:15  →  15 000 ms (not 20 000)
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

Interval = tuple[datetime, datetime]


def union_ms(
    intervals: Iterable[Interval],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
) -> int:
    """Return the milliseconds the intervals cover, clipped to ``[since, until]``."""
    clipped = []
    for start, end in intervals:
        start = max(start, since) if since is not None else start
        end = min(end, until) if until is not None else end
        if end > start:
            clipped.append((start, end))
    total = 0.0
    current: Interval | None = None
    for start, end in sorted(clipped):
        if current is not None and start <= current[1]:
            current = (current[0], max(current[1], end))
            continue
        if current is not None:
            total += (current[1] - current[0]).total_seconds()
        current = (start, end)
    if current is not None:
        total += (current[1] - current[0]).total_seconds()
    return int(total * 1000)


def paired(
    asked: Iterable[datetime], answered: Iterable[datetime], now: datetime
) -> list[Interval]:
    """Return question/answer intervals in order; an open question lasts until now."""
    answers = sorted(answered)
    return [
        (start, answers[i] if i < len(answers) else now)
        for i, start in enumerate(sorted(asked))
    ]
