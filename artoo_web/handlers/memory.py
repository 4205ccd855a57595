"""R5 on the bus: the memory worker, the only process that opens LevelDB.

Every other process reaches memory through bus messages on the ``memory`` queue,
or (the web process and the CLI) through memory tasks awaited with a timeout.

A Megram a run sends is stored as its user's, one sent with no run as shared;
a run's recall reads its user's and the shared Megrams only
(``memory/owners.py``), so one user's commands never reach another's plan.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading

from django.conf import settings

from artoo_web import bus, redisconn, telemetry, topics
from artoo_web.models import BusMessage, Run
from memory import MegramStore
from memory.owners import owner_of
from roles.contracts import Megram, MemoryQuery, MemoryRecall
from roles.llm import client as llm
from roles.llm import offline
from roles.memory_contracts import (
    GLOBAL_ENTITY,
    GLOBAL_SPACE,
    SHARED_OWNER,
    owner_for_user,
)
from roles.planner import calibrate

log = logging.getLogger(__name__)

GLOBAL_RECENT = 3
RELATED_TASKS = 2
MAX_TARGETS = 50

_store: MegramStore | None = None
_lock = threading.Lock()


def store() -> MegramStore:
    """Return this process's store, opening it on first use."""
    global _store
    with _lock:
        if _store is None:
            settings.MEMORY_PATH.parent.mkdir(parents=True, exist_ok=True)
            _store = MegramStore(settings.MEMORY_PATH)
        return _store


def close_store() -> None:
    global _store
    with _lock:
        if _store is not None:
            _store.close()
            _store = None


def recall_for(query: MemoryQuery, owner: str) -> MemoryRecall:
    """Return the calibration material R2 asked for, as ``owner`` may read it.

    Besides the task's own pair: what the operator remembered, the experience
    of related past tasks (found by the words of the intent, which is indexed
    for later tasks) and what failing calls taught about the query's tools.
    """
    mem = store()
    potentials = mem.query_mk(query.space, query.entity, reader=owner)
    related = []
    if query.intent.strip():
        related = mem.related_intents(
            query.space, query.intent, query.entity, RELATED_TASKS, reader=owner
        )
        mem.index_intent(query.space, query.intent, owner)
    sops, recent = [], []
    for space in [query.space, *(task.space for task in related)]:
        sops += mem.query_c(space, query.entity, reader=owner)
        recent += mem.query_recent(space, query.entity, query.limit, reader=owner)
    recall = MemoryRecall(
        task_id=query.task_id,
        space=query.space,
        entity=query.entity,
        sops=sops,
        recent=recent,
        attention=potentials.attention,
        decision=potentials.decision,
        action=potentials.action,
        operator=operator_memories(mem),
        related=related,
        targets=mem.target_signals(
            query.tools, MAX_TARGETS, intent=query.intent, reader=owner
        ),
    )
    publish_global(recall.operator)
    return recall.model_copy(update={"constraints": calibrate(recall).text})


def operator_memories(mem: MegramStore) -> list[Megram]:
    """Return what operators remembered: the global rules, then its newest M/K.

    Only shared Megrams: R1's copy of them serves every user's runs.
    """
    rules = mem.query_rules(GLOBAL_SPACE, GLOBAL_ENTITY, reader=SHARED_OWNER)
    recent = mem.query_recent(
        GLOBAL_SPACE, GLOBAL_ENTITY, GLOBAL_RECENT, reader=SHARED_OWNER
    )
    return rules + recent


def publish_global(memories: list[Megram]) -> None:
    """Leave the operator's memories in Redis for R1's fast path.

    R1 runs on the pipeline workers, which never open LevelDB; the memory
    worker refreshes this copy on each write to the global space, each
    MemoryQuery, forget and Dreamer pass.
    """
    texts = [" ".join(m.content.split()) for m in memories if m.content.strip()]
    try:
        redisconn.client().set(topics.GLOBAL_MEMORIES, json.dumps(texts))
    except Exception:
        log.warning("global memories not published for R1", exc_info=True)


def refresh_global() -> None:
    publish_global(operator_memories(store()))


def global_memories() -> list[str]:
    """Return the operator's memories for R1's fast path ([] when unknown)."""
    try:
        raw = redisconn.client().get(topics.GLOBAL_MEMORIES)
    except Exception:
        log.warning("global memories unreadable; R1 answers without them")
        return []
    return json.loads(raw) if raw else []


def answer_query(msg: BusMessage) -> None:
    """(R5, MemoryQuery): answer R2 with what the run's user may read."""
    run = Run.objects.get(id=msg.run_id)
    query = MemoryQuery.model_validate(msg.payload)
    with telemetry.searching_memory(run.id) as answered:
        recall = recall_for(query, owner_for_user(run.owner_id))
        answered(recall)
    bus.send(run, "R5", "R2", "MemoryRecall", recall, round=msg.round)


def write_megram(msg: BusMessage) -> None:
    """(R5, Megram): store one unit of experience as its run's user's, naming
    the run it rests on."""
    owner, runs = SHARED_OWNER, []
    if msg.run_id is not None:
        user_id = Run.objects.filter(id=msg.run_id).values_list("owner_id").get()[0]
        owner, runs = owner_for_user(user_id), [str(msg.run_id)]
    megram = Megram.model_validate(msg.payload).model_copy(
        update={"owner": owner, "runs": runs}
    )
    megram = store().write(megram)
    if megram.space == GLOBAL_SPACE:
        refresh_global()


def distiller():
    """Return the Dreamer's distiller: the TOOL-tier LLM, or the offline one."""
    if not llm.is_configured(os.environ):
        return offline.distil

    def distil(space, entity, signal, valence, contents):
        prompt = (
            f"Space: {space}\nEntity: {entity}\nSignal: {signal}\n"
            f"Valence: {valence:+.2f}\nSource experiences:\n"
            + "\n".join(f"{i}. {c}" for i, c in enumerate(contents, 1))
            + "\n\nWrite ONE actionable rule of at most two sentences. "
            "Reply with the rule text only."
        )
        with llm.client_for("R5", os.environ) as client:
            text, _ = client.complete_text([{"role": "user", "content": prompt}])
        return text.strip()

    return distil


def dream() -> dict:
    report = store().dream(distil=distiller())
    refresh_global()
    return dataclasses.asdict(report)


def summary(reader: str | None = None) -> dict:
    result = store().summary(reader=reader)
    return {
        "counts": result.counts,
        "total": result.total,
        "rules": [m.model_dump(mode="json") for m in result.rules],
    }


def groups(space: str | None = None, reader: str | None = None) -> list[dict]:
    return [
        {
            "space": g.space,
            "entity": g.entity,
            "counts": g.counts,
            "potentials": g.potentials.model_dump(mode="json"),
            "megrams": [
                {**m.model_dump(mode="json"), "owner": owner_of(m.space, m.owner)}
                for m in g.megrams
            ],
        }
        for g in store().groups(space, reader=reader)
    ]


def forget(prefix: str) -> int:
    count = store().forget(prefix)
    refresh_global()
    return count
