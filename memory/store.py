"""Store Megrams in LevelDB and answer the R5 queries (paper §6, §7).

LevelDB allows one process per database; inside that process the store is
safe to share between threads. Writes are single atomic batches; the steps
that read, then write (recall stamping, negative feedback, forgetting, the
Dreamer) hold one lock so they never interleave.

Every read takes a ``reader``: ``"user:7"`` gets user 7's Megrams and the
shared ones, as the runs of user 7 may (``memory/owners.py``); None, the
default, gets every Megram (staff and the operator's tools).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import plyvel

from roles.contracts import Megram, Potentials
from roles.memory_contracts import RelatedTask, TargetSignal

from . import intents, keys, overview, records, targets
from .dreamer import Distil, DreamReport, run_pass
from .owners import readable
from .potentials import potentials, summary_sums


class MemoryLockedError(RuntimeError):
    """Raised when another process holds the LevelDB lock of the store."""


def _uuid4() -> str:
    # Same text as str(uuid.uuid4()), at a third of its cost on the write path.
    h = os.urandom(16).hex()
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


def _need_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


class MegramStore:
    """Hold the MKCT Megrams of one LevelDB directory."""

    def __init__(self, path: str | os.PathLike[str], *, id_factory=None) -> None:
        """Open (creating if missing) the LevelDB at ``path``.

        Raise ``MemoryLockedError`` at once when another process holds it.
        """
        self.path = os.fspath(path)
        self._new_id: Callable[[], str] = id_factory or _uuid4
        self._lock = threading.RLock()
        self._dream_lock = threading.Lock()
        os.makedirs(self.path, exist_ok=True)
        try:
            self._db = plyvel.DB(
                self.path,
                create_if_missing=True,
                bloom_filter_bits=10,
                lru_cache_size=64 << 20,
                write_buffer_size=64 << 20,
                max_file_size=16 << 20,
            )
        except plyvel.IOError as exc:
            # LevelDB words only a lock conflict as "lock <path>/LOCK: ...".
            if "IO error: lock " not in str(exc):
                raise
            raise MemoryLockedError(
                f"LevelDB allows one process; the memory worker owns {self.path}; "
                f"reach memory through the memory worker (LevelDB said: {exc})"
            ) from exc

    def __enter__(self) -> MegramStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database; calling it again does nothing."""
        with self._lock:
            if not self._db.closed:
                self._db.close()

    # -- writes -------------------------------------------------------------

    def write(self, megram: Megram, now: datetime | None = None) -> Megram:
        """Persist one Megram synchronously and return it as stored."""
        return self.write_many([megram], now)[0]

    def write_many(
        self, megrams: Iterable[Megram], now: datetime | None = None
    ) -> list[Megram]:
        """Persist Megrams in one atomic batch and return them as stored.

        Empty ``id``/``created_at`` are filled (new id, ``now``). An invalid
        item, or an explicit id already stored, aborts the batch: nothing is
        written.
        """
        now = records.resolve_now(now)
        stored, seen = [], set()
        with self._db.write_batch(transaction=True) as batch:
            for item in megrams:
                megram = self._complete(records.coerce(item), now, seen)
                records.put(batch, records.to_record(megram))
                stored.append(megram)
        return stored

    def _complete(self, m: Megram, now: datetime, seen: set[str]) -> Megram:
        if m.id:
            if m.id in seen or self._db.get(keys.record_key(m.id)) is not None:
                raise ValueError(f"Megram id {m.id!r} is already stored")
            mid = m.id
        else:
            mid = self._new_id()
            if not isinstance(mid, str) or not mid or keys.SEP in mid:
                raise ValueError(f"id_factory returned an unusable id {mid!r}")
        seen.add(mid)
        created = m.created_at
        if created is None:
            created = now
        elif created.tzinfo is not UTC:
            created = records.as_utc(created, "created_at")
        return m.model_copy(update={"id": mid, "created_at": created})

    # -- reads ----------------------------------------------------------------

    def get(self, megram_id: str) -> Megram | None:
        """Return the Megram with this id, or None."""
        rec = records.fetch(self._db, _need_text(megram_id, "megram_id"))
        return None if rec is None else records.to_megram(rec)

    def query_mk(
        self,
        space: str,
        entity: str,
        now: datetime | None = None,
        *,
        reader: str | None = None,
    ) -> Potentials:
        """Return the live potentials of a pair over the Megrams ``reader`` sees."""
        now_ts = records.resolve_now(now).timestamp()
        _need_text(space, "space")
        _need_text(entity, "entity")
        return potentials(*summary_sums(self._db, space, entity, now_ts, reader))

    def query_c(
        self,
        space: str,
        entity: str,
        now: datetime | None = None,
        *,
        reader: str | None = None,
    ) -> list[Megram]:
        """Return a pair's C-level Megrams, newest first, stamping their recall."""
        return self._recall_levels(space, entity, now, ("C",), reader)

    def query_rules(
        self,
        space: str,
        entity: str,
        now: datetime | None = None,
        *,
        reader: str | None = None,
    ) -> list[Megram]:
        """Return a pair's C- and T-level Megrams, newest first, stamping recall."""
        return self._recall_levels(space, entity, now, ("C", "T"), reader)

    def _recall_levels(
        self,
        space: str,
        entity: str,
        now: datetime | None,
        levels: tuple[str, ...],
        reader: str | None,
    ) -> list[Megram]:
        stamp = records.resolve_now(now).isoformat().encode()
        with self._lock:
            pair = self._pair(space, entity, reader)
            hits = [r for r in pair if r["level"] in levels]
            with self._db.write_batch(transaction=True) as batch:
                for rec in hits:
                    batch.put(keys.recall_key(rec["id"]), stamp)
        return _newest_first(hits)

    def query_recent(
        self, space: str, entity: str, n: int, *, reader: str | None = None
    ) -> list[Megram]:
        """Return the ``n`` newest M/K Megrams of a pair not yet consolidated."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        recs = [
            r
            for r in self._pair(space, entity, reader)
            if r["level"] in ("M", "K") and r["state"] != records.CONSOLIDATED
        ]
        return _newest_first(recs)[:n]

    def index_intent(self, space: str, intent: str, owner: str = "") -> None:
        """Add a task's intent to the lexical index under its space and owner."""
        _need_text(space, "space")
        with self._lock:
            intents.index(self._db, space, intent, owner)

    def related_intents(
        self,
        space: str,
        intent: str,
        entity: str = "env:local",
        limit: int = 2,
        *,
        reader: str | None = None,
    ) -> list[RelatedTask]:
        """Return past tasks whose indexed intent shares enough words, best first."""
        hits = intents.related(self._db, space, intent, entity, limit, reader)
        return [RelatedTask(space=s, intent=i, score=score) for s, i, score in hits]

    def target_signals(
        self,
        tools: list[str],
        limit: int = 50,
        now: datetime | None = None,
        intent: str = "",
        *,
        reader: str | None = None,
    ) -> list[TargetSignal]:
        """Return the (tool, target) pairs memory says to avoid or to confirm.

        Only pairs of ``tools`` count (every tool's when ``tools`` is empty);
        those whose target ``intent`` names come first.
        """
        now_ts = records.resolve_now(now).timestamp()
        return targets.signals(self._db, list(tools), now_ts, limit, intent, reader)

    def _pair(
        self, space: str, entity: str, reader: str | None
    ) -> list[dict[str, Any]]:
        _need_text(space, "space")
        _need_text(entity, "entity")
        return list(readable(reader, records.pair_records(self._db, space, entity)))

    # -- corrections and maintenance -----------------------------------------

    def forget(self, id_prefix: str) -> int:
        """Delete every Megram whose id starts with ``id_prefix``; return the count."""
        if not isinstance(id_prefix, str) or not id_prefix:
            raise ValueError("forget needs a non-empty id prefix")
        with self._lock:
            doomed = list(records.all_records(self._db, keys.record_key(id_prefix)))
            with self._db.write_batch(transaction=True) as batch:
                for rec in doomed:
                    records.delete(batch, rec)
        return len(doomed)

    def dream(
        self, now: datetime | None = None, distil: Distil | None = None
    ) -> DreamReport:
        """Run one Dreamer pass: GC, trust bankruptcy, then consolidation."""
        now = records.resolve_now(now)
        if distil is not None and not callable(distil):
            raise TypeError("distil must be callable or None")
        with self._dream_lock:
            return run_pass(self._db, self._lock, self._new_id, now, distil)

    # -- inspection -------------------------------------------------------------

    def groups(
        self,
        space: str | None = None,
        now: datetime | None = None,
        *,
        reader: str | None = None,
    ) -> list[overview.MemoryGroup]:
        """Return every (space, entity) group with counts, potentials, Megrams."""
        if space is not None:
            _need_text(space, "space")
        return overview.build_groups(self._db, space, records.resolve_now(now), reader)

    def summary(self, *, reader: str | None = None) -> overview.MemorySummary:
        """Return level counts (M, K, C, T), the total and the C-level rules."""
        return overview.build_summary(self._db, reader)


def _newest_first(recs: list[dict[str, Any]]) -> list[Megram]:
    megrams = [records.to_megram(r) for r in recs]
    megrams.sort(key=lambda m: m.created_at, reverse=True)
    return megrams
