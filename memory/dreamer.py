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

Steps 1–2 read every record once (a sequential scan of ``m|``) and keep only
per-pair sums, so memory grows with pairs, not Megrams. The distil call may
be a slow LLM request, so it runs outside the store lock; the group is
re-read under the lock before its rule is written.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roles.contracts import Megram

from . import keys, records
from .owners import owner_of, weighs_on
from .potentials import GC_BELOW, decay, sums

log = logging.getLogger(__name__)

Distil = Callable[[str, str, str, float, list[str]], str]

CONSOLIDATE_ATTENTION = 5.0
CONSOLIDATE_DECISION = 3.0
DEMOTED_K = 0.05
MAX_SOURCES = 10
# Sums of decayed floats are never exactly zero by accident of rounding alone;
# a rule must be opposed by more than noise to lose its authority.
SIGN_EPSILON = 1e-9
_CHUNK = 10_000
_DECAYING = ("M", "K")


@dataclass(frozen=True)
class DreamReport:
    """Counts of one Dreamer pass."""

    deleted: int = 0
    demoted: int = 0
    promoted: int = 0


@dataclass
class _Tally:
    """Per-pair sums gathered in the scan, by owner (rules are kept individually)."""

    decision_rest: dict[str, float] = field(default_factory=dict)
    open_sums: dict[str, list[float]] = field(default_factory=dict)
    rules: list[tuple[dict[str, Any], float]] = field(default_factory=list)

    def add_rest(self, owner: str, signed: float) -> None:
        self.decision_rest[owner] = self.decision_rest.get(owner, 0.0) + signed

    def add_open(self, rec: dict[str, Any], owner: str, weight: float) -> None:
        if rec["level"] in _DECAYING and rec["state"] != records.CONSOLIDATED:
            acc = self.open_sums.get(owner)
            if acc is None:
                acc = self.open_sums[owner] = [0.0, 0.0]
            acc[0] += abs(rec["f"]) * weight
            acc[1] += rec["sigma"] * rec["f"] * weight

    def candidates(self) -> list[str]:
        """Return the owners whose open Megrams of the pair call for a rule."""
        return sorted(
            owner
            for owner, (attention, decision) in self.open_sums.items()
            if signal_of(attention, decision) is not None
        )


def _owner(rec: dict[str, Any]) -> str:
    return owner_of(rec["space"], rec.get("owner", ""))


def signal_of(attention: float, decision: float) -> str | None:
    """Return "Best Practice", "Constraint" or None for a group's sums."""
    if attention < CONSOLIDATE_ATTENTION:
        return None
    if decision >= CONSOLIDATE_DECISION:
        return "Best Practice"
    if decision <= -CONSOLIDATE_DECISION:
        return "Constraint"
    return None


def run_pass(
    db: Any,
    lock: threading.RLock,
    new_id: Callable[[], str],
    now: datetime,
    distil: Distil | None,
) -> DreamReport:
    """Run one Dreamer pass over the whole store and report what changed."""
    now_ts = now.timestamp()
    with lock:
        deleted, tallies = _collect(db, now_ts)
        demoted = _bankrupt(db, tallies, now_ts)
    promoted = 0
    if distil is not None:
        groups = sorted((p, o) for p, t in tallies.items() for o in t.candidates())
        for pair, owner in groups:
            promoted += _consolidate(db, lock, new_id, now, distil, pair, owner)
    return DreamReport(deleted=deleted, demoted=demoted, promoted=promoted)


def _collect(db: Any, now_ts: float) -> tuple[int, dict[tuple[str, str], _Tally]]:
    recalls = records.all_recalls(db)
    tallies: dict[tuple[str, str], _Tally] = {}
    doomed: list[dict[str, Any]] = []
    deleted = 0
    for rec in records.all_records(db):
        created = records.created_ts(rec)
        level, f, k = rec["level"], rec["f"], rec["k"]
        if level in _DECAYING and abs(f) * decay(k, created, now_ts) < GC_BELOW:
            doomed.append(rec)
            if len(doomed) >= _CHUNK:
                deleted += _delete(db, doomed)
            continue
        weight = decay(k, max(created, recalls.get(rec["id"], created)), now_ts)
        pair = (rec["space"], rec["entity"])
        tally = tallies.get(pair) or tallies.setdefault(pair, _Tally())
        owner = _owner(rec)
        if level == "C":
            tally.rules.append((rec, rec["sigma"] * f * weight))
        else:
            tally.add_rest(owner, rec["sigma"] * f * weight)
        tally.add_open(rec, owner, weight)
    deleted += _delete(db, doomed)
    return deleted, tallies


def _delete(db: Any, doomed: list[dict[str, Any]]) -> int:
    count = len(doomed)
    with db.write_batch(transaction=True) as batch:
        for rec in doomed:
            records.delete(batch, rec)
    doomed.clear()
    return count


def _bankrupt(db: Any, tallies: dict[tuple[str, str], _Tally], now_ts: float) -> int:
    """Demote the rules their pair now contradicts; return how many."""
    recalls = None
    demoted = 0
    with db.write_batch(transaction=True) as batch:
        for tally in tallies.values():
            for rec in _contradicted(tally):
                recalls = recalls if recalls is not None else records.all_recalls(db)
                batch.delete(keys.level_key(rec["level"], rec["id"]))
                rec.update(level="K", k=DEMOTED_K)
                records.put(batch, rec)
                origin = max(records.created_ts(rec), recalls.get(rec["id"], 0.0))
                tally.add_open(rec, _owner(rec), decay(DEMOTED_K, origin, now_ts))
                demoted += 1
    return demoted


def _contradicted(tally: _Tally) -> list[dict[str, Any]]:
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


def _open_members(db: Any, pair: tuple[str, str], owner: str) -> list[dict[str, Any]]:
    return [
        r
        for r in records.pair_records(db, *pair)
        if r["level"] in _DECAYING
        and r["state"] != records.CONSOLIDATED
        and _owner(r) == owner
    ]


def _consolidate(
    db: Any,
    lock: threading.RLock,
    new_id: Callable[[], str],
    now: datetime,
    distil: Distil,
    pair: tuple[str, str],
    owner: str,
) -> int:
    """Distil and store one rule for a pair's owner; return 1 if one was written."""
    with lock:
        members = _open_members(db, pair, owner)
        recalls = {r["id"]: records.recall_ts(db, r["id"]) for r in members}
        attention, decision = sums(members, recalls, now.timestamp())
    signal = signal_of(attention, decision)
    if signal is None:
        return 0
    rule = _ask(distil, pair, signal, decision, _contents(members))
    if not rule:
        return 0
    with lock:
        return _store_rule(db, new_id, now, (pair, owner), signal, rule, members)


def _contents(members: list[dict[str, Any]]) -> list[str]:
    newest = sorted(members, key=records.created_ts, reverse=True)
    return [r["content"] for r in newest if r["content"].strip()][:MAX_SOURCES]


def _ask(
    distil: Distil, pair: tuple[str, str], signal: str, valence: float, contents: list
) -> str:
    try:
        answer = distil(pair[0], pair[1], signal, valence, contents)
    except Exception:
        log.warning("distil failed for %s; group skipped", pair, exc_info=True)
        return ""
    return answer.strip() if isinstance(answer, str) else ""


def _store_rule(
    db: Any,
    new_id: Callable[[], str],
    now: datetime,
    group: tuple[tuple[str, str], str],
    signal: str,
    rule: str,
    members: list[dict[str, Any]],
) -> int:
    # Only the Dreamer rewrites records and the dream lock is held, so the one
    # change a member can have undergone since it was read is being forgotten,
    # which removes its index key with the record.
    pair, owner = group
    present = records.present_ids(db, *pair)
    fresh = [r for r in members if r["id"] in present]
    if not fresh:
        return 0
    rule_megram = records.coerce(
        Megram(
            id=new_id(),
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
        )
    )
    with db.write_batch(transaction=True) as batch:
        for rec in fresh:
            rec["state"] = records.CONSOLIDATED
            records.put_state(batch, rec)
        records.put(batch, records.to_record(rule_megram))
    return 1
