"""Describe the store for people: groups per pair and a level summary.

Plain dataclasses, so a web page (or a test) can render them directly. A
reader (``memory/owners.py``) is described only what it may see: the counts,
potentials and rules of its own and the shared Megrams.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roles.contracts import Megram, Potentials

from . import keys, records
from .owners import readable
from .potentials import potentials, sums


@dataclass(frozen=True)
class MemoryGroup:
    """One (space, entity) pair: counts per level, live potentials, Megrams."""

    space: str
    entity: str
    counts: dict[str, int]
    potentials: Potentials
    megrams: list[Megram] = field(default_factory=list)


@dataclass(frozen=True)
class MemorySummary:
    """Level counts (zero-filled M, K, C, T), their total and the C-level rules."""

    counts: dict[str, int]
    total: int
    rules: list[Megram]


def build_groups(
    db: Any, space: str | None, now: datetime, reader: str | None = None
) -> list[MemoryGroup]:
    """Return the groups of one space (or of all), ordered by space and entity."""
    if space is None:
        recs = records.all_records(db)
    else:
        recs = (r for r in _space_records(db, space) if r["space"] == space)
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for rec in readable(reader, recs):
        pairs[(rec["space"], rec["entity"])].append(rec)
    recalls = records.all_recalls(db)
    now_ts = now.timestamp()
    return [_group(pair, pairs[pair], recalls, now_ts) for pair in sorted(pairs)]


def _space_records(db: Any, space: str) -> list[dict[str, Any]]:
    out = []
    with db.iterator(prefix=keys.space_prefix(space), include_value=False) as it:
        for key in it:
            rec = records.fetch(db, keys.id_of(key))
            if rec is not None:
                out.append(rec)
    return out


def _group(
    pair: tuple[str, str],
    recs: list[dict[str, Any]],
    recalls: dict[str, float],
    now_ts: float,
) -> MemoryGroup:
    counts = dict.fromkeys(records.LEVELS, 0)
    for rec in recs:
        counts[rec["level"]] += 1
    megrams = [records.to_megram(r) for r in recs]
    megrams.sort(key=lambda m: m.created_at, reverse=True)
    return MemoryGroup(
        space=pair[0],
        entity=pair[1],
        counts=counts,
        potentials=potentials(*sums(recs, recalls, now_ts)),
        megrams=megrams,
    )


def build_summary(db: Any, reader: str | None = None) -> MemorySummary:
    """Return the level counts from the level index and the C-level rules."""
    if reader is not None:
        return _readable_summary(db, reader)
    counts = {}
    for level in records.LEVELS:
        with db.iterator(prefix=keys.level_prefix(level), include_value=False) as it:
            counts[level] = sum(1 for _ in it)
    rules = []
    with db.iterator(prefix=keys.level_prefix("C"), include_value=False) as it:
        for key in it:
            rec = records.fetch(db, keys.id_of(key))
            if rec is not None:
                rules.append(records.to_megram(rec))
    rules.sort(key=lambda m: m.created_at, reverse=True)
    return MemorySummary(counts=counts, total=sum(counts.values()), rules=rules)


def _readable_summary(db: Any, reader: str) -> MemorySummary:
    """Return the summary of what ``reader`` sees, from one scan of the records."""
    counts = dict.fromkeys(records.LEVELS, 0)
    rules = []
    for rec in readable(reader, records.all_records(db)):
        counts[rec["level"]] += 1
        if rec["level"] == "C":
            rules.append(records.to_megram(rec))
    rules.sort(key=lambda m: m.created_at, reverse=True)
    return MemorySummary(counts=counts, total=sum(counts.values()), rules=rules)
