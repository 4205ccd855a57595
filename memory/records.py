"""Encode, decode, check and persist Megram records.

Inside the store a record is the plain dict of its compact JSON, for example
``{"id":"9f..","level":"M","created_at":"2025-01-02T03:04:05.000006+00:00",
"space":"intent:x","entity":"env:local","content":"..","state":"accept",
"f":0.9,"sigma":1.0,"k":0.05,"owner":"user:7","runs":["3c1e.."]}``; a record
stored before owners were recorded has no ``owner`` key (``memory/owners.py``),
and one that rests on no run (or stored before runs were named) no ``runs``. Hot loops
work on these dicts; a ``Megram`` is built (without re-validation) only when a
record leaves the store.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import jiter
import pydantic_core

from roles.contracts import Megram

from . import keys

LEVELS = ("M", "K", "C", "T")
CONSOLIDATED = "consolidated"
_JSON_DUMP = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
# The Dreamer decodes every record of the store and rewrites the ones it
# consolidates: jiter and pydantic-core (the JSON code pydantic and the openai
# client use) read and write the same compact UTF-8 JSON several times as fast
# as ``json``.
_LOAD = jiter.from_json
# Pair-index value: creation time and the three quantities the potentials need,
# so QueryMK is one prefix scan without reading the records (see keys.py).
_SUMMARY = struct.Struct("<dddd")
SUMMARY_SIZE = _SUMMARY.size
unpack_summary = _SUMMARY.unpack_from


def as_utc(moment: Any, name: str = "now") -> datetime:
    """Return an aware datetime converted to UTC, refusing anything else."""
    if not isinstance(moment, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {moment!r}")
    return moment.astimezone(UTC)


def resolve_now(now: datetime | None) -> datetime:
    """Return ``now`` in UTC, or the current time when it is None."""
    return datetime.now(UTC) if now is None else as_utc(now)


def coerce(item: Any) -> Megram:
    """Return ``item`` as a checked Megram (a Megram or a mapping of its fields).

    A Megram built with ``model_construct`` skipped validation, so the ranges
    are checked here too; violations raise ``ValueError`` naming the field.
    """
    if isinstance(item, Megram):
        megram = item
    elif isinstance(item, Mapping):
        megram = Megram.model_validate(item)
    else:
        raise TypeError(f"expected a Megram or a mapping, got {type(item).__name__}")
    if not megram.level:
        megram = megram.model_copy(update={"level": "M"})
    if not _looks_valid(megram):
        _check(megram)
    return megram


def _looks_valid(m: Megram) -> bool:
    # One cheap expression for the common case; _check names the problem.
    try:
        return (
            0.0 <= m.f <= 1.0
            and -1.0 <= m.sigma <= 1.0
            and 0.0 <= m.k < math.inf
            and m.level in LEVELS
            and type(m.space) is str
            and type(m.entity) is str
            and type(m.content) is str
            and type(m.state) is str
            and type(m.owner) is str
            and type(m.id) is str
            and bool(m.space)
            and bool(m.entity)
            and keys.SEP not in m.id
            and (m.created_at is None or m.created_at.tzinfo is UTC)
        )
    except TypeError:
        return False


def _check(m: Megram) -> None:
    problems = []
    if not isinstance(m.id, str) or keys.SEP in m.id:
        problems.append(f"id must be a string without '|', got {m.id!r}")
    if m.level not in LEVELS:
        problems.append(f"level must be one of {LEVELS}, got {m.level!r}")
    for name in ("space", "entity"):
        value = getattr(m, name)
        if not isinstance(value, str) or not value:
            problems.append(f"{name} must be a non-empty string, got {value!r}")
    for name in ("content", "state", "owner"):
        if not isinstance(getattr(m, name), str):
            problems.append(f"{name} must be a string")
    if not _within(m.f, 0.0, 1.0):
        problems.append(f"f must be in [0, 1], got {m.f!r}")
    if not _within(m.sigma, -1.0, 1.0):
        problems.append(f"sigma must be in [-1, 1], got {m.sigma!r}")
    if not _within(m.k, 0.0, math.inf) or math.isinf(m.k):
        problems.append(f"k must be finite and >= 0, got {m.k!r}")
    if problems:
        raise ValueError("invalid Megram: " + "; ".join(problems))
    if m.created_at is not None:
        as_utc(m.created_at, "created_at")


def _within(value: Any, low: float, high: float) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return low <= value <= high


def to_record(m: Megram) -> dict[str, Any]:
    """Return the stored dict of a complete Megram (id and created_at set)."""
    rec = {
        "id": m.id,
        "level": m.level,
        "created_at": m.created_at.isoformat(),
        "space": m.space,
        "entity": m.entity,
        "content": m.content,
        "state": m.state,
        "f": float(m.f),
        "sigma": float(m.sigma),
        "k": float(m.k),
    }
    if m.owner:
        rec["owner"] = m.owner
    if m.runs:
        rec["runs"] = list(m.runs)
    return rec


def to_megram(rec: Mapping[str, Any]) -> Megram:
    """Return the Megram of a stored record, skipping re-validation."""
    fields = dict(rec)
    fields["created_at"] = datetime.fromisoformat(rec["created_at"])
    return Megram.model_construct(**fields)


def _dump(value: Any) -> bytes:
    """Return the compact UTF-8 JSON of ``value``, as ``json`` would write it."""
    try:
        return pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError:
        # Text UTF-8 cannot hold (a lone surrogate) or a value JSON has no
        # form for: raise the error ``json`` raises.
        return _JSON_DUMP(value).encode()


def decode(raw: bytes) -> dict[str, Any]:
    """Return the record dict of a stored JSON value."""
    return _LOAD(raw)


def created_ts(rec: Mapping[str, Any]) -> float:
    """Return a record's creation time as a POSIX timestamp."""
    return datetime.fromisoformat(rec["created_at"]).timestamp()


def put(batch: Any, rec: Mapping[str, Any]) -> None:
    """Add a record with its pair and level index keys to a write batch."""
    mid, space, entity = rec["id"], rec["space"], rec["entity"]
    owner = rec.get("owner", "")
    summary = _SUMMARY.pack(created_ts(rec), rec["f"], rec["sigma"], rec["k"])
    if owner:
        summary += _dump([space, entity, owner])
    elif keys.SEP in space or keys.SEP in entity:
        summary += _dump([space, entity])
    batch.put(keys.record_key(mid), _dump(rec))
    batch.put(keys.index_key(space, entity, mid), summary)
    batch.put(keys.level_key(rec["level"], mid), b"")


def put_state(batch: Any, rec: Mapping[str, Any]) -> None:
    """Rewrite a stored record whose state alone changed (no index holds it)."""
    batch.put(keys.record_key(rec["id"]), _dump(rec))


def present_ids(db: Any, space: str, entity: str) -> set[str]:
    """Return the ids the pair index of (space, entity) holds, from its keys alone.

    An escaped look-alike pair shares the index prefix, so the set may hold its
    ids too: use it to test ids of records known to be of this pair.
    """
    with db.iterator(prefix=keys.pair_prefix(space, entity), include_value=False) as it:
        return {keys.id_of(key) for key in it}


def delete(batch: Any, rec: Mapping[str, Any]) -> None:
    """Add the deletion of all four key kinds of a record to a write batch."""
    mid = rec["id"]
    batch.delete(keys.record_key(mid))
    batch.delete(keys.index_key(rec["space"], rec["entity"], mid))
    batch.delete(keys.level_key(rec["level"], mid))
    batch.delete(keys.recall_key(mid))


def fetch(db: Any, megram_id: str) -> dict[str, Any] | None:
    """Return the stored record of an id, or None."""
    raw = db.get(keys.record_key(megram_id))
    return None if raw is None else decode(raw)


def pair_records(db: Any, space: str, entity: str) -> list[dict[str, Any]]:
    """Return the records of one (space, entity) pair by a prefix scan."""
    out = []
    get = db.get
    with db.iterator(prefix=keys.pair_prefix(space, entity), include_value=False) as it:
        for key in it:
            raw = get(keys.record_key(keys.id_of(key)))
            if raw is None:
                continue
            rec = decode(raw)
            if rec["space"] == space and rec["entity"] == entity:
                out.append(rec)
    return out


def all_records(db: Any, prefix: bytes = keys.RECORD) -> Iterator[dict[str, Any]]:
    """Yield every record whose primary key starts with ``prefix``."""
    with db.iterator(prefix=prefix, include_key=False) as it:
        for raw in it:
            yield decode(raw)


def summary_tail(value: bytes) -> tuple[list[str] | None, str]:
    """Return the original ``[space, entity]`` a pair-index value carries and its owner.

    The pair is None when the value carries none (the key parts are the
    originals); the owner is "" when the record has none.
    """
    if len(value) == SUMMARY_SIZE:
        return None, ""
    tail = _LOAD(value[SUMMARY_SIZE:])
    return tail[:2], tail[2] if len(tail) > 2 else ""


def pair_summaries(
    db: Any, space: str, entity: str
) -> Iterator[tuple[str, float, float, float, float, str]]:
    """Yield ``(id, created_ts, f, sigma, k, owner)`` of a pair from its index alone.

    A value longer than the summary carries the original space and entity
    (they held a ``|``, or the record has an owner); otherwise the originals
    equal the key parts, which equal the asked pair only when it holds no
    ``|`` either.
    """
    plain = keys.SEP not in space and keys.SEP not in entity
    prefix = keys.pair_prefix(space, entity)
    cut = len(prefix)
    with db.iterator(prefix=prefix) as it:
        for key, value in it:
            pair, owner = summary_tail(value)
            if pair is None:
                if not plain:
                    continue
            elif pair != [space, entity]:
                continue
            yield (key[cut:].decode(), *unpack_summary(value), owner)


def recall_ts(db: Any, megram_id: str) -> float | None:
    """Return the last recall time of a Megram as a timestamp, or None."""
    raw = db.get(keys.recall_key(megram_id))
    return None if raw is None else datetime.fromisoformat(raw.decode()).timestamp()


def all_recalls(db: Any) -> dict[str, float]:
    """Return the last recall time of every recalled Megram, by id."""
    with db.iterator(prefix=keys.RECALL) as it:
        return {
            keys.id_of(k): datetime.fromisoformat(v.decode()).timestamp() for k, v in it
        }
