"""Read what failing calls taught about (tool, target) pairs, for every task.

GGS writes a Megram in space ``tool:<name>``, entity ``target:<value>`` for each
distinct failing call of an action state (``tool:shell`` / ``target:cloc .``).
They belong to no task: one prefix scan of the pair index over ``x|tool:`` sums
every pair's potentials from the index summaries alone (as QueryMK does), and a
pair whose action is Avoid or Caution becomes a TargetSignal named by its newest
Megram, so a task about to use that tool on that target learns of it. A
reader counts only the Megrams it may see (``memory/owners.py``): another
user's failing commands neither name a target to it nor weigh on one.
"""

from __future__ import annotations

import math
import re
from typing import Any

from roles.memory_contracts import TargetSignal

from . import keys, records
from .intents import path_names, words_of
from .owners import can_read
from .potentials import decay, derive_action

TOOL_PREFIX = "tool:"
TARGET_PREFIX = "target:"
SIGNAL_ACTIONS = ("Avoid", "Caution")
# A file named without a directory: a word with an extension (app.log).
_FILE = re.compile(r"[\w-]+\.[a-z0-9]{1,5}\b")


def signals(
    db: Any,
    tools: list[str],
    now_ts: float,
    limit: int,
    intent: str = "",
    reader: str | None = None,
) -> list[TargetSignal]:
    """Return the Avoid, then Caution, pairs of ``tools`` (all when empty).

    In each, pairs whose target ``intent`` names (its text, or all of its
    words) come first; then Avoid pairs strongest first, Caution by attention.
    """
    sums = _sums(db, set(tools), now_ts, reader)
    found = []
    for (tool, target), (attention, decision, newest, _) in sums.items():
        action = derive_action(attention, decision)
        if action not in SIGNAL_ACTIONS:
            continue
        rec = records.fetch(db, newest)
        found.append(
            TargetSignal(
                tool=tool,
                target=target,
                action=action,
                attention=attention,
                decision=decision,
                megram_id=newest,
                content=rec["content"] if rec else "",
            )
        )
    named = _namer(intent)
    found = [s.model_copy(update={"bears": named(s.target)}) for s in found]
    found.sort(
        key=lambda s: (
            s.action != "Avoid",
            not s.bears,
            s.decision if s.action == "Avoid" else -s.attention,
            s.tool,
            s.target,
        )
    )
    return found[:limit]


def _namer(intent: str):
    """Return a predicate: does the intent name this target? It does when it
    holds one of the files the target names (a path's last part, a name with
    an extension), else its text or all of its words."""
    lower = intent.lower()
    words = words_of(intent)

    def named(target: str) -> bool:
        if not lower:
            return False
        files = path_names(target.lower()) | set(_FILE.findall(target.lower()))
        if files:
            return any(f in lower for f in files)
        own = words_of(target)
        return target.lower() in lower or bool(own) and own <= words

    return named


def _sums(
    db: Any, tools: set[str], now_ts: float, reader: str | None
) -> dict[tuple[str, str], list[Any]]:
    """Return ``[attention, decision, newest id, newest time]`` per pair."""
    sums: dict[tuple[str, str], list[Any]] = {}
    prefix = keys.INDEX + keys.key_part(TOOL_PREFIX).encode()
    with db.iterator(prefix=prefix) as it:
        for key, value in it:
            space, entity, mid, owner = _pair_of(key, value)
            tool = space.removeprefix(TOOL_PREFIX)
            target = entity.removeprefix(TARGET_PREFIX)
            if tool == space or target == entity or not target:
                continue
            if not can_read(reader, space, owner):
                continue
            if tools and tool not in tools:
                continue
            created, f, sigma, k = records.unpack_summary(value)
            recalled = records.recall_ts(db, mid)
            origin = created if recalled is None or recalled < created else recalled
            weight = decay(k, origin, now_ts)
            acc = sums.setdefault((tool, target), [0.0, 0.0, "", -math.inf])
            acc[0] += abs(f) * weight
            acc[1] += sigma * f * weight
            if created > acc[3]:
                acc[2], acc[3] = mid, created
    return sums


def _pair_of(key: bytes, value: bytes) -> tuple[str, str, str, str]:
    """Return the original (space, entity), the id and owner of a pair-index entry."""
    _, space, entity, mid = key.decode().split(keys.SEP, 3)
    pair, owner = records.summary_tail(value)
    if pair is not None:
        space, entity = pair
    return space, entity, mid, owner
