"""Find past tasks related to a new one by the words of their intents.

R1 names a task's memory space (``intent:<task_id>``) anew for every request, so
"list the python files" and "find all python files" land in different spaces.
Each MemoryQuery indexes its intent's words under its space; a later query
looks up the spaces sharing its words and keeps those whose word sets overlap
enough (Dice coefficient ≥ 0.5) and that hold experience. Words are lower-case
ASCII words of three letters or more without stop words, a plural ``s`` cut
(``files`` → ``file``), and character pairs of CJK text, so the index needs no
language model and no network. A path or URL gives the words of its last part
only: the same task on another directory is the same task.

Each owner's intents are indexed apart and a query finds only those its reader
may see (``memory/owners.py``): a user's past tasks are never named to another.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import keys, records
from .owners import can_read

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
# A path or URL counts by its last part: where a run's files lie (a session's
# temporary directory, a host and port) says nothing of what the task is.
_PATH = re.compile(r"[^\s`'\"()<>,;]*/[^\s`'\"()<>,;]*")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def words_of(text: str) -> set[str]:
    """Return the index words of ``text``; a path or URL gives those of its
    last part (``/tmp/s1/db/config.yaml`` gives config and yaml)."""
    lower = _PATH.sub(_last_part, (text or "").lower())
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


def path_names(text: str) -> set[str]:
    """Return the last parts of the paths and URLs ``text`` holds."""
    return {_last_part(m) for m in _PATH.finditer(text or "")} - {""}


def _last_part(path: re.Match[str]) -> str:
    return path.group().rstrip("/").rsplit("/", 1)[-1]


def index(db: Any, space: str, intent: str, owner: str = "") -> None:
    """Record ``intent`` as the intent of ``space`` for ``owner``, adding its words."""
    new = words_of(intent)
    if not new:
        return
    known = _entry(db, keys.intent_key(space, owner))
    old = set(known["words"]) if known else set()
    words = sorted(old | new)[:MAX_WORDS]
    if known and known["intent"] == intent and set(words) == old:
        return
    entry = {"space": space, "intent": intent, "words": words}
    if owner:
        entry["owner"] = owner
    with db.write_batch(transaction=True) as batch:
        batch.put(keys.intent_key(space, owner), json.dumps(entry).encode())
        for word in words:
            batch.put(keys.word_key(word, space, owner), b"")


def related(
    db: Any,
    space: str,
    intent: str,
    entity: str,
    limit: int,
    reader: str | None = None,
) -> list[tuple[str, str, float]]:
    """Return up to ``limit`` ``(space, intent, score)`` of related past tasks.

    Best first; ``space`` itself, spaces without a Megram of ``entity`` and
    intents or Megrams ``reader`` may not see are left out.
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
        if not can_read(reader, entry["space"], entry.get("owner", "")):
            continue
        score = 2 * count / (len(query) + len(entry["words"]))
        if score >= MIN_SCORE and _has_experience(db, entry["space"], entity, reader):
            found.append((entry["space"], entry["intent"], round(score, 3)))
    return _best_per_space(found)[:limit]


Hit = tuple[str, str, float]


def _best_per_space(found: list[Hit]) -> list[Hit]:
    # A reader may see one space indexed by two owners: name it once, at its best.
    best: dict[str, Hit] = {}
    for hit in found:
        if hit[0] not in best or hit[2] > best[hit[0]][2]:
            best[hit[0]] = hit
    return sorted(best.values(), key=lambda hit: (-hit[2], hit[0]))


def _entry(db: Any, key: bytes) -> dict[str, Any] | None:
    raw = db.get(key)
    return None if raw is None else json.loads(raw.decode())


def _has_experience(db: Any, space: str, entity: str, reader: str | None) -> bool:
    return any(
        can_read(reader, space, summary[-1])
        for summary in records.pair_summaries(db, space, entity)
    )
