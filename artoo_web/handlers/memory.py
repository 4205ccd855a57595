"""R5 on the bus: the memory worker, the only process that opens LevelDB.

Every other process reaches memory through bus messages on the ``memory`` queue,
or (the web process and the CLI) through memory tasks awaited with a timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading

from django.conf import settings

from artoo_web import bus
from artoo_web.models import BusMessage, Run
from memory import MegramStore
from roles import llm, offline
from roles.contracts import Megram, MemoryQuery, MemoryRecall
from roles.planner import calibrate

log = logging.getLogger(__name__)

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


def recall_for(query: MemoryQuery) -> MemoryRecall:
    """Return the calibration material R2 asked for."""
    mem = store()
    potentials = mem.query_mk(query.space, query.entity)
    recall = MemoryRecall(
        task_id=query.task_id,
        space=query.space,
        entity=query.entity,
        sops=mem.query_c(query.space, query.entity),
        recent=mem.query_recent(query.space, query.entity, query.limit),
        attention=potentials.attention,
        decision=potentials.decision,
        action=potentials.action,
    )
    return recall.model_copy(update={"constraints": calibrate(recall).text})


def answer_query(msg: BusMessage) -> None:
    """(R5, MemoryQuery): answer R2 with the calibration material."""
    recall = recall_for(MemoryQuery.model_validate(msg.payload))
    run = Run.objects.get(id=msg.run_id)
    bus.send(run, "R5", "R2", "MemoryRecall", recall, round=msg.round)


def write_megram(msg: BusMessage) -> None:
    """(R5, Megram): store one unit of experience."""
    store().write(Megram.model_validate(msg.payload))


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
    return dataclasses.asdict(store().dream(distil=distiller()))


def summary() -> dict:
    result = store().summary()
    return {
        "counts": result.counts,
        "total": result.total,
        "rules": [m.model_dump(mode="json") for m in result.rules],
    }


def groups(space: str | None = None) -> list[dict]:
    return [
        {
            "space": g.space,
            "entity": g.entity,
            "counts": g.counts,
            "potentials": g.potentials.model_dump(mode="json"),
            "megrams": [m.model_dump(mode="json") for m in g.megrams],
        }
        for g in store().groups(space)
    ]


def forget(prefix: str) -> int:
    return store().forget(prefix)
