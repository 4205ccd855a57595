"""Find past tasks related to a new one by the words of their intents.

R1 names a task's memory space (``intent:<task_id>``) anew for every request, so
"list the python files" and "find all python files" land in different spaces.
Each MemoryQuery indexes its intent's words under its space; a later query
looks up the spaces sharing its words and keeps those whose word sets overlap
enough (Dice coefficient ≥ 0.5) and that hold experience. Words are lower-case
ASCII words of three letters or more without stop words, a plural ``s`` cut
(``files`` → ``file``), and character pairs of CJK text, so the index needs no
language model and no network.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import keys

MIN_SCORE = 0.5
MAX_WORDS = 64
STOP_WORDS = frozenset(
    "the and for with from into onto all any this that these those what which "
    "who whom how are was were its his her their our your you can could please "
    "then than out about use using give get tell show make let now just also "
    "some each every there here when where why does did has have had will would "
    "should must may might not but per via".split()
)  # fmt: skip
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def words_of(text: str) -> set[str]:
    """Return the index words of ``text``."""
    lower = (text or "").lower()
    words = set()
    for word in _ASCII_WORD.findall(lower):
        if len(word) < 3 or word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    for run in _CJK_RUN.findall(lower):
        if len(run) == 1:
            words.add(run)
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    return words


def index(db: Any, space: str, intent: str) -> None:
    """Record ``intent`` as the intent of ``space``, adding its words."""
    new = words_of(intent)
    if not new:
        return
    known = _entry(db, keys.intent_key(space))
    old = set(known["words"]) if known else set()
    words = sorted(old | new)[:MAX_WORDS]
    if known and known["intent"] == intent and set(words) == old:
        return
    entry = {"space": space, "intent": intent, "words": words}
    with db.write_batch(transaction=True) as batch:
        batch.put(keys.intent_key(space), json.dumps(entry).encode())
        for word in words:
            batch.put(keys.word_key(word, space), b"")


def related(
    db: Any, space: str, intent: str, entity: str, limit: int
) -> list[tuple[str, str, float]]:
    """Return up to ``limit`` ``(space, intent, score)`` of related past tasks.

    Best first; ``space`` itself and spaces without a Megram of ``entity`` are
    left out.
    """
    query = words_of(intent)
    if not query or limit <= 0:
        return []
    shared: dict[bytes, int] = {}
    for word in query:
        prefix = keys.word_prefix(word)
        with db.iterator(prefix=prefix, include_value=False) as it:
            for key in it:
                part = key[len(prefix) :]
                shared[part] = shared.get(part, 0) + 1
    found = []
    for part, count in shared.items():
        entry = _entry(db, keys.INTENT + part)
        if entry is None or entry["space"] == space:
            continue
        score = 2 * count / (len(query) + len(entry["words"]))
        if score >= MIN_SCORE and _has_experience(db, entry["space"], entity):
            found.append((entry["space"], entry["intent"], round(score, 3)))
    found.sort(key=lambda hit: (-hit[2], hit[0]))
    return found[:limit]


def _entry(db: Any, key: bytes) -> dict[str, Any] | None:
    raw = db.get(key)
    return None if raw is None else json.loads(raw.decode())


def _has_experience(db: Any, space: str, entity: str) -> bool:
    with db.iterator(prefix=keys.pair_prefix(space, entity), include_value=False) as it:
        return next(it, None) is not None
