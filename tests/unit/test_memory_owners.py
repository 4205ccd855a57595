"""Whose Megrams a reader sees, on a real LevelDB: its own, the shared, no other's.

Readers are spelled as R5 spells them: ``"user:<id>"`` for the runs of a user,
None for staff and the operator's tools.
"""

import json
import struct
from datetime import UTC, datetime, timedelta

import plyvel
import pytest

from memory import MegramStore
from memory import keys as memory_keys
from roles.contracts import Megram
from roles.ggs.megrams import make_megram
from roles.memory_contracts import SHARED_OWNER, owner_for_user

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SPACE, ENTITY = "intent:list_python_files", "env:local"
ANN, BOB = owner_for_user(1), owner_for_user(2)


@pytest.fixture
def store(tmp_path):
    with MegramStore(tmp_path / "memory.leveldb") as s:
        yield s


def accepted(owner, content, space=SPACE, at=T0):
    megram = make_megram(space, ENTITY, content, "accept", now=at)
    return megram.model_copy(update={"owner": owner})


def avoided(owner, command):
    megram = make_megram(
        "tool:shell",
        f"target:{command}",
        "count: wrong tool",
        "change_approach",
        now=T0,
    )
    return megram.model_copy(update={"owner": owner})


def contents(megrams):
    return sorted(m.content for m in megrams)


# -- a task's own pair ----------------------------------------------------------------


def test_a_reader_recalls_its_own_and_shared_megrams_of_a_pair_not_anothers(store):
    store.write_many(
        [
            accepted(ANN, "Tools: shell:ls ann-only"),
            accepted(BOB, "Tools: shell:ls bob-secret"),
            accepted(SHARED_OWNER, "Tools: shell:ls for-all"),
        ]
    )
    seen = store.query_recent(SPACE, ENTITY, 10, reader=ANN)
    assert contents(seen) == ["Tools: shell:ls ann-only", "Tools: shell:ls for-all"]
    assert len(store.query_recent(SPACE, ENTITY, 10)) == 3
    assert {m.owner for m in seen} == {ANN, SHARED_OWNER}


def test_rules_and_potentials_count_only_what_the_reader_sees(store):
    rule = accepted(BOB, "Always use bob-secret-flag").model_copy(
        update={"level": "C", "k": 0.0}
    )
    store.write(rule)
    store.write_many([accepted(BOB, f"bob run {i}") for i in range(3)])
    assert store.query_c(SPACE, ENTITY, now=T0, reader=ANN) == []
    assert store.query_mk(SPACE, ENTITY, now=T0, reader=ANN).action == "Ignore"
    assert store.query_mk(SPACE, ENTITY, now=T0, reader=BOB).action == "Exploit"
    assert contents(store.query_c(SPACE, ENTITY, now=T0, reader=BOB)) == [
        "Always use bob-secret-flag"
    ]


# -- failed targets and related tasks --------------------------------------------------


def test_another_users_failed_command_is_no_target_signal(store):
    store.write(avoided(BOB, "cat bob-secret.txt"))
    store.write(avoided(ANN, "cloc ."))
    assert [s.target for s in store.target_signals([], now=T0, reader=ANN)] == [
        "cloc ."
    ]
    assert {s.target for s in store.target_signals([], now=T0)} == {
        "cloc .",
        "cat bob-secret.txt",
    }


def test_another_users_past_task_is_never_named_as_related(store):
    store.index_intent("intent:bob_task", "list the python files of bob", BOB)
    store.write(accepted(BOB, "bob found them", space="intent:bob_task"))
    assert (
        store.related_intents("intent:mine", "list the python files", reader=ANN) == []
    )
    (hit,) = store.related_intents("intent:mine", "list the python files", reader=BOB)
    assert hit.intent == "list the python files of bob"


def test_one_space_indexed_by_two_users_names_each_its_own_intent(store):
    store.index_intent("intent:shared_id", "rotate the nginx logs for ann", ANN)
    store.index_intent("intent:shared_id", "rotate the nginx logs for bob", BOB)
    store.write_many(
        [
            accepted(ANN, "ann rotated", space="intent:shared_id"),
            accepted(BOB, "bob rotated", space="intent:shared_id"),
        ]
    )
    (ann,) = store.related_intents("intent:new", "rotate nginx logs", reader=ANN)
    (bob,) = store.related_intents("intent:new", "rotate nginx logs", reader=BOB)
    assert (ann.intent, bob.intent) == (
        "rotate the nginx logs for ann",
        "rotate the nginx logs for bob",
    )


# -- Megrams stored before owners were recorded ----------------------------------------


def test_a_megram_without_owner_is_staff_only_unless_it_is_global(store):
    store.write(accepted("", "legacy run output"))
    store.write(accepted("", "legacy operator note", space="global:user"))
    assert contents(store.query_recent(SPACE, ENTITY, 10, reader=ANN)) == []
    assert contents(store.query_recent("global:user", ENTITY, 10, reader=ANN)) == [
        "legacy operator note"
    ]
    assert contents(store.query_recent(SPACE, ENTITY, 10)) == ["legacy run output"]


def test_a_record_stored_in_the_old_format_is_read_as_owner_unknown(tmp_path):
    path = tmp_path / "memory.leveldb"
    record = {
        "id": "old-1",
        "level": "M",
        "created_at": T0.isoformat(),
        "space": SPACE,
        "entity": ENTITY,
        "content": "old output",
        "state": "accept",
        "f": 0.9,
        "sigma": 1.0,
        "k": 0.05,
    }
    db = plyvel.DB(str(path), create_if_missing=True)
    db.put(memory_keys.record_key("old-1"), json.dumps(record).encode())
    summary = struct.pack("<dddd", T0.timestamp(), 0.9, 1.0, 0.05)
    db.put(memory_keys.index_key(SPACE, ENTITY, "old-1"), summary)
    db.put(memory_keys.level_key("M", "old-1"), b"")
    db.close()
    with MegramStore(path) as store:
        (megram,) = store.query_recent(SPACE, ENTITY, 1)
        assert (megram.content, megram.owner) == ("old output", "")
        assert store.query_recent(SPACE, ENTITY, 1, reader=ANN) == []
        assert store.query_mk(SPACE, ENTITY, now=T0, reader=ANN).attention == 0.0
        assert store.query_mk(SPACE, ENTITY, now=T0).attention == pytest.approx(0.9)


# -- the memory page's views and the Dreamer -------------------------------------------


def test_groups_and_summary_describe_only_what_the_reader_sees(store):
    store.write_many(
        [
            accepted(ANN, "ann output"),
            accepted(BOB, "bob output"),
            accepted(BOB, "Never run bob-secret", space="intent:other").model_copy(
                update={"level": "C", "k": 0.0}
            ),
        ]
    )
    (group,) = store.groups(reader=ANN)
    assert [m.content for m in group.megrams] == ["ann output"]
    assert group.counts["M"] == 1
    summary = store.summary(reader=ANN)
    assert (summary.total, summary.rules) == (1, [])
    assert store.summary().total == 3
    assert [m.content for m in store.summary(reader=BOB).rules] == [
        "Never run bob-secret"
    ]


class Distiller:
    def __init__(self):
        self.calls = []

    def __call__(self, space, entity, signal, valence, sources):
        self.calls.append(sources)
        return f"rule from {len(sources)} runs"


def test_the_dreamer_distils_each_users_experience_apart(store):
    store.write_many([accepted(ANN, f"ann step {i}") for i in range(6)])
    store.write_many([accepted(BOB, f"bob step {i}") for i in range(6)])
    distil = Distiller()
    assert store.dream(now=T0, distil=distil).promoted == 2
    assert sorted(sorted(sources) for sources in distil.calls) == [
        [f"ann step {i}" for i in range(6)],
        [f"bob step {i}" for i in range(6)],
    ]
    (ann_rule,) = store.query_c(SPACE, ENTITY, now=T0, reader=ANN)
    (bob_rule,) = store.query_c(SPACE, ENTITY, now=T0, reader=BOB)
    assert (ann_rule.owner, bob_rule.owner) == (ANN, BOB)


def test_another_users_failures_do_not_demote_a_users_rule(store):
    rule = Megram(
        level="C",
        space=SPACE,
        entity=ENTITY,
        content="Best",
        state="Best Practice",
        f=1.0,
        sigma=1.0,
        k=0.0,
        owner=ANN,
        created_at=T0,
    )
    store.write(rule)
    failures = [accepted(BOB, "bob failed").model_copy(update={"sigma": -1.0})] * 3
    store.write_many(failures, now=T0 + timedelta(days=1))
    assert store.dream(now=T0 + timedelta(days=1)).demoted == 0
    shared = rule.model_copy(update={"id": "", "owner": SHARED_OWNER})
    shared = store.write(shared)
    assert store.dream(now=T0 + timedelta(days=1)).demoted == 1
    assert store.get(shared.id).level == "K"
