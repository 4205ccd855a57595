"""Run the Dreamer: forget, demote and consolidate Megrams (paper §7).

One pass, in order:

1. GC: delete M/K Megrams with ``|f|·e^(−kΔt) < 0.1``, Δt from creation.
2. Trust bankruptcy: demote a C-level rule to K (k 0.05) when the decision
   potential of its pair *without the rule itself* has the opposite sign.
3. Consolidation: distil one C-level rule from each pair whose
   non-consolidated M/K Megrams reach attention ≥ 5 and |decision| ≥ 3.

Each owner's Megrams (``memory/owners.py``) are consolidated apart, so a rule
distils one user's experience only and belongs to that user; a rule is judged
by what its readers see: its owner's and the shared Megrams of its pair (a
shared rule, by everyone's).

The store is compacted first. Steps 1–2 read every record once (a sequential
scan of ``m|``) and keep per-pair sums and each open group's newest contents
(``memory/tally.py``), so memory grows with pairs, not Megrams. The distil
calls (each may be a slow LLM request) run outside the store lock on what the
scan kept; the rules are then written and their members marked consolidated
in a second sequential scan. No record is read at random: on a large store
those reads, one per member, were most of a pass.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from roles.contracts import Megram

from . import keys, records
from .owners import owner_of, weighs_on
from .potentials import GC_BELOW, decay
from .tally import DECAYING, Tally, signal_of

log = logging.getLogger(__name__)

Distil = Callable[[str, str, str, float, list[str]], str]

DEMOTED_K = 0.05
# Sums of decayed floats are never exactly zero by accident of rounding alone;
# a rule must be opposed by more than noise to lose its authority.
SIGN_EPSILON = 1e-9
_CHUNK = 10_000


@dataclass(frozen=True)
class DreamReport:
    """Counts of one Dreamer pass."""

    deleted: int = 0
    demoted: int = 0
    promoted: int = 0


def _owner(rec: dict[str, Any]) -> str:
    return owner_of(rec["space"], rec.get("owner", ""))


def run_pass(
    db: Any,
    lock: threading.RLock,
    new_id: Callable[[], str],
    now: datetime,
    distil: Distil | None,
) -> DreamReport:
    """Run one Dreamer pass over the whole store and report what changed."""
    now_ts = now.timestamp()
    # The pass reads every record twice in key order: on a store fresh from
    # many writes, each read merges several overlapping files. One compaction
    # first (writers are not held up) makes both scans cheaper.
    db.compact_range()
    with lock:
        recalls = records.all_recalls(db)
        deleted, tallies = _collect(db, now_ts, recalls)
        demoted = _bankrupt(db, tallies, now_ts, recalls)
    promoted = 0
    if distil is not None:
        rules = _distil_all(distil, tallies)
        if rules:
            with lock:
                promoted = _store_rules(db, new_id, now, rules)
    return DreamReport(deleted=deleted, demoted=demoted, promoted=promoted)


def _collect(
    db: Any, now_ts: float, recalls: dict[str, float]
) -> tuple[int, dict[tuple[str, str], Tally]]:
    tallies: dict[tuple[str, str], Tally] = {}
    doomed: list[dict[str, Any]] = []
    deleted = 0
    for rec in records.all_records(db):
        created = records.created_ts(rec)
        level, f, k = rec["level"], rec["f"], rec["k"]
        if level in DECAYING and abs(f) * decay(k, created, now_ts) < GC_BELOW:
            doomed.append(rec)
            if len(doomed) >= _CHUNK:
                deleted += _delete(db, doomed)
            continue
        weight = decay(k, max(created, recalls.get(rec["id"], created)), now_ts)
        pair = (rec["space"], rec["entity"])
        tally = tallies.get(pair) or tallies.setdefault(pair, Tally())
        owner = _owner(rec)
        if level == "C":
            tally.rules.append((rec, rec["sigma"] * f * weight))
        else:
            tally.add_rest(owner, rec["sigma"] * f * weight)
        tally.add_open(rec, owner, created, weight)
    deleted += _delete(db, doomed)
    return deleted, tallies


def _delete(db: Any, doomed: list[dict[str, Any]]) -> int:
    count = len(doomed)
    with db.write_batch(transaction=True) as batch:
        for rec in doomed:
            records.delete(batch, rec)
    doomed.clear()
    return count


def _bankrupt(
    db: Any,
    tallies: dict[tuple[str, str], Tally],
    now_ts: float,
    recalls: dict[str, float],
) -> int:
    """Demote the rules their pair now contradicts; return how many."""
    demoted = 0
    with db.write_batch(transaction=True) as batch:
        for tally in tallies.values():
            for rec in _contradicted(tally):
                batch.delete(keys.level_key(rec["level"], rec["id"]))
                rec.update(level="K", k=DEMOTED_K)
                records.put(batch, rec)
                created = records.created_ts(rec)
                origin = max(created, recalls.get(rec["id"], 0.0))
                weight = decay(DEMOTED_K, origin, now_ts)
                tally.add_open(rec, _owner(rec), created, weight)
                demoted += 1
    return demoted


def _contradicted(tally: Tally) -> list[dict[str, Any]]:
    # Judged against the pass's starting state, so the outcome does not depend
    # on the order in which two rules of one pair are visited.
    out = []
    for i, (rec, _) in enumerate(tally.rules):
        owner = _owner(rec)
        others = math.fsum(
            [
                *(s for w, s in tally.decision_rest.items() if weighs_on(owner, w)),
                *(
                    s
                    for j, (other, s) in enumerate(tally.rules)
                    if j != i and weighs_on(owner, _owner(other))
                ),
            ]
        )
        sigma = rec["sigma"]
        if (sigma > 0 and others < -SIGN_EPSILON) or (
            sigma < 0 and others > SIGN_EPSILON
        ):
            out.append(rec)
    return out


# (pair, owner) -> (signal, rule, horizon, the runs its sources rest on)
_Rules = dict[tuple[tuple[str, str], str], tuple[str, str, float, list[str]]]


def _distil_all(distil: Distil, tallies: dict[tuple[str, str], Tally]) -> _Rules:
    """Ask for each candidate group's rule, outside the store lock.

    The sums and sources are the scan's: the group is not read again.
    """
    rules: _Rules = {}
    for pair, tally in sorted(tallies.items()):
        for owner in tally.candidates():
            group = tally.open_groups[owner]
            signal = signal_of(group.attention, group.decision)
            rule = _ask(distil, pair, signal, group.decision, group.sources())
            if rule:
                rules[(pair, owner)] = (
                    signal,
                    rule,
                    group.horizon,
                    group.source_runs(),
                )
    return rules


def _ask(
    distil: Distil, pair: tuple[str, str], signal: str, valence: float, contents: list
) -> str:
    try:
        answer = distil(pair[0], pair[1], signal, valence, contents)
    except Exception:
        log.warning("distil failed for %s; group skipped", pair, exc_info=True)
        return ""
    return answer.strip() if isinstance(answer, str) else ""


def _store_rules(
    db: Any, new_id: Callable[[], str], now: datetime, rules: _Rules
) -> int:
    """Write the distilled rules, then mark their groups' members consolidated.

    A group keeps its rule only while a Megram of its owner is still in the pair
    (all of them may have been forgotten during the distil calls); that is read
    off the pair index. One sequential scan of the records then finds the
    members: each group's open M/K Megrams created no later than the newest one
    the pass tallied, so a Megram written during the distil call (not among the
    rule's sources) stays open. Members are rewritten in chunks, each atomic; a
    crash between chunks leaves members open beside their rule, and the next
    pass distils them into a second rule rather than losing them.
    """
    kept = {g: r for g, r in rules.items() if _has_owner(db, *g)}
    with db.write_batch(transaction=True) as batch:
        for (pair, owner), (signal, rule, _, runs) in sorted(kept.items()):
            rec = _rule_record(new_id(), now, pair, owner, signal, rule, runs)
            records.put(batch, rec)
    horizons = {group: horizon for group, (_, _, horizon, _) in kept.items()}
    pending: list[dict[str, Any]] = []
    for rec in records.all_records(db):
        if rec["level"] not in DECAYING or rec["state"] == records.CONSOLIDATED:
            continue
        horizon = horizons.get(((rec["space"], rec["entity"]), _owner(rec)))
        if horizon is not None and records.created_ts(rec) <= horizon:
            rec["state"] = records.CONSOLIDATED
            pending.append(rec)
            if len(pending) >= _CHUNK:
                _rewrite_states(db, pending)
    _rewrite_states(db, pending)
    return len(kept)


def _has_owner(db: Any, pair: tuple[str, str], owner: str) -> bool:
    return any(
        owner_of(pair[0], o) == owner for *_, o in records.pair_summaries(db, *pair)
    )


def _rewrite_states(db: Any, recs: list[dict[str, Any]]) -> None:
    # Only the Dreamer rewrites records and the store lock is held: no record
    # read in the scan has changed since.
    with db.write_batch(transaction=True) as batch:
        for rec in recs:
            records.put_state(batch, rec)
    recs.clear()


def _rule_record(
    mid: str,
    now: datetime,
    pair: tuple[str, str],
    owner: str,
    signal: str,
    rule: str,
    runs: list[str],
) -> dict[str, Any]:
    return records.to_record(
        records.coerce(
            Megram(
                id=mid,
                level="C",
                created_at=now,
                space=pair[0],
                entity=pair[1],
                content=rule,
                state=signal,
                f=1.0,
                sigma=1.0 if signal == "Best Practice" else -1.0,
                k=0.0,
                owner=owner,
                runs=runs,
            )
        )
    )
