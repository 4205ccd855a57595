"""The Megram store on a real LevelDB: writes, keys, atomicity, lock, forget."""

import json
import struct
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import plyvel
import pytest
from pydantic import ValidationError

from memory import MegramStore, MemoryLockedError
from roles.contracts import Megram

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 1, 1, tzinfo=UTC)
SPACE, ENTITY = "intent:deploy", "env:local"


@pytest.fixture
def path(tmp_path):
    return tmp_path / "memory.leveldb"


@pytest.fixture
def store(path):
    with MegramStore(path) as s:
        yield s


def megram(f=0.9, sigma=1.0, k=0.05, level="M", space=SPACE, entity=ENTITY, **extra):
    return Megram(
        level=level, space=space, entity=entity, f=f, sigma=sigma, k=k, **extra
    )


def raw_keys(path):
    with plyvel.DB(str(path)) as db:
        return {key.decode(): value for key, value in db}


def test_write_fills_id_creation_time_and_level(store):
    stored = store.write(Megram(space=SPACE, entity=ENTITY, f=0.8, sigma=1, k=0.05))
    assert stored.id and stored.level == "M"
    assert stored.created_at.tzinfo is UTC
    assert store.get(stored.id) == stored


def test_write_keeps_given_fields_and_converts_creation_time_to_utc(store):
    paris = timezone(timedelta(hours=1))
    given = megram(id="abc", created_at=datetime(2025, 1, 1, 13, tzinfo=paris))
    stored = store.write(given, now=T0)
    assert stored.id == "abc"
    assert stored.created_at == datetime(2025, 1, 1, 12, tzinfo=UTC)
    assert stored.created_at.tzinfo is UTC
    assert store.get("abc").created_at == stored.created_at


def test_write_fills_an_empty_level_with_m(store):
    bare = Megram.model_construct(space=SPACE, entity=ENTITY, f=0.5, sigma=0, k=0)
    bare.level = ""
    assert store.write(bare, now=T0).level == "M"


def test_write_uses_the_injected_clock_and_id_factory(path):
    ids = iter(["one", "two"])
    with MegramStore(path, id_factory=lambda: next(ids)) as s:
        stored = s.write_many([megram(), megram()], now=T0)
    assert [(m.id, m.created_at) for m in stored] == [("one", T0), ("two", T0)]


def test_write_many_stores_every_item_and_indexes_them(store, path):
    stored = store.write_many([megram(), megram(level="C", k=0.0)], now=T0)
    store.close()
    keys = raw_keys(path)
    for m in stored:
        assert json.loads(keys[f"m|{m.id}"])["level"] == m.level
        assert f"x|{SPACE}|{ENTITY}|{m.id}" in keys
        assert f"l|{m.level}|{m.id}" in keys


def test_index_value_summarises_the_record(store, path):
    m = store.write(megram(f=0.3, sigma=0.0, k=0.2), now=T0)
    store.close()
    value = raw_keys(path)[f"x|{SPACE}|{ENTITY}|{m.id}"]
    assert struct.unpack("<dddd", value) == (T0.timestamp(), 0.3, 0.0, 0.2)


def test_a_bar_inside_space_or_entity_becomes_an_underscore_in_keys(store, path):
    m = store.write(megram(space="tool:a|b", entity="path:/x|y"), now=T0)
    assert store.get(m.id).space == "tool:a|b"
    assert store.query_mk("tool:a|b", "path:/x|y", now=T0).attention == 0.9
    store.close()
    assert f"x|tool:a_b|path:/x_y|{m.id}" in raw_keys(path)


def test_escaped_look_alike_pairs_stay_apart(store):
    barred = store.write(megram(f=0.9, space="tool:a|b"), now=T0)
    plain = store.write(megram(f=0.3, space="tool:a_b"), now=T0)
    assert store.query_mk("tool:a|b", ENTITY, now=T0).attention == 0.9
    assert store.query_mk("tool:a_b", ENTITY, now=T0).attention == 0.3
    assert [m.id for m in store.query_recent("tool:a|b", ENTITY, 5)] == [barred.id]
    assert [m.id for m in store.query_recent("tool:a_b", ENTITY, 5)] == [plain.id]


def test_a_query_reads_only_its_own_pair(store):
    store.write_many([megram(space="intent:other"), megram(entity="env:b")], now=T0)
    store.write(megram(f=0.5), now=T0)
    assert store.query_mk(SPACE, ENTITY, now=T0).attention == 0.5


def test_write_many_with_an_invalid_item_after_valid_ones_writes_nothing(store):
    bad = Megram.model_construct(space=SPACE, entity=ENTITY, f=2.0, sigma=1.0, k=0.1)
    with pytest.raises(ValueError, match="f must be in"):
        store.write_many([megram(), megram(), bad], now=T0)
    assert store.summary().total == 0
    assert store.query_mk(SPACE, ENTITY, now=T0).attention == 0.0


def test_write_many_refuses_a_mapping_that_fails_validation(store):
    with pytest.raises(ValidationError, match="sigma"):
        store.write_many([megram(), {"space": SPACE, "entity": ENTITY, "f": 0.5}])
    assert store.summary().total == 0


def test_write_accepts_a_mapping_of_megram_fields(store):
    stored = store.write(
        {"space": SPACE, "entity": ENTITY, "f": 0.5, "sigma": 0, "k": 0}
    )
    assert store.get(stored.id).f == 0.5


@pytest.mark.parametrize(
    ("item", "error", "message"),
    [
        ("not a megram", TypeError, "expected a Megram"),
        (megram(id="a|b"), ValueError, "without '|'"),
        (megram(created_at=datetime(2025, 1, 1)), ValueError, "timezone-aware"),
        (
            Megram.model_construct(space="", entity=ENTITY, f=0.5, sigma=0, k=0),
            ValueError,
            "space must be",
        ),
        (
            Megram.model_construct(space=SPACE, entity=ENTITY, f=0.5, sigma=0, k=-1),
            ValueError,
            "k must be",
        ),
    ],
)
def test_bad_items_get_a_clear_error(store, item, error, message):
    with pytest.raises(error, match=message):
        store.write(item)
    assert store.summary().total == 0


def test_an_explicit_id_already_stored_is_refused(store):
    store.write(megram(id="same"), now=T0)
    with pytest.raises(ValueError, match="already stored"):
        store.write(megram(id="same", f=0.1), now=T0)
    with pytest.raises(ValueError, match="already stored"):
        store.write_many([megram(id="twin"), megram(id="twin")], now=T0)
    assert store.get("same").f == 0.9
    assert store.get("twin") is None


def test_get_of_an_unknown_id_is_none(store):
    assert store.get("missing") is None


def test_data_survives_closing_and_reopening(path):
    with MegramStore(path) as s:
        stored = s.write(megram(), now=T0)
    with MegramStore(path) as s:
        assert s.get(stored.id) == stored


def test_a_second_process_gets_a_clear_lock_error_without_hanging(store, path):
    code = (
        "import sys\n"
        "from memory import MegramStore, MemoryLockedError\n"
        "try:\n"
        f"    MegramStore({str(path)!r})\n"
        "except MemoryLockedError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "LevelDB allows one process" in done.stdout
    assert f"the memory worker owns {path}" in done.stdout
    assert "reach memory through the memory worker" in done.stdout


def test_a_second_open_in_the_same_process_is_refused(store, path):
    with pytest.raises(MemoryLockedError, match="one process"):
        MegramStore(path)


def test_forget_deletes_every_key_of_matching_ids(store, path):
    store.write_many(
        [megram(id="abc1", level="C", k=0), megram(id="abc2"), megram(id="abd3")],
        now=T0,
    )
    store.query_c(SPACE, ENTITY, now=T0)
    assert store.forget("abc") == 2
    assert store.get("abc1") is None and store.get("abd3") is not None
    store.close()
    assert [k for k in raw_keys(path) if "abc" in k] == []


def test_forget_of_an_unmatched_prefix_deletes_nothing(store):
    store.write(megram(id="abc"), now=T0)
    assert store.forget("zzz") == 0
    assert store.summary().total == 1


@pytest.mark.parametrize("prefix", ["", None])
def test_forget_refuses_an_empty_prefix(store, prefix):
    store.write(megram(), now=T0)
    with pytest.raises(ValueError, match="non-empty id prefix"):
        store.forget(prefix)
    assert store.summary().total == 1


def test_summary_counts_levels_and_lists_the_rules(store):
    store.write_many([megram(), megram(), megram(level="K")], now=T0)
    rule = store.write(megram(level="C", k=0, content="prefer rsync"), now=T0)
    s = store.summary()
    assert s.counts == {"M": 2, "K": 1, "C": 1, "T": 0}
    assert s.total == 4
    assert [(r.id, r.content) for r in s.rules] == [(rule.id, "prefer rsync")]


def test_groups_report_counts_potentials_and_newest_megrams_first(store):
    old = store.write(megram(f=0.9, sigma=-1.0), now=T0)
    new = store.write(megram(f=0.9, sigma=-1.0, level="K"), now=T0 + timedelta(1))
    store.write(megram(space="intent:other", f=0.2), now=T0)
    groups = store.groups(now=T0 + timedelta(1))
    assert [(g.space, g.entity) for g in groups] == [
        (SPACE, ENTITY),
        ("intent:other", ENTITY),
    ]
    g = groups[0]
    assert g.counts == {"M": 1, "K": 1, "C": 0, "T": 0}
    assert [m.id for m in g.megrams] == [new.id, old.id]
    assert g.potentials.action == "Avoid"
    assert g.potentials.decision == pytest.approx(-0.9 - 0.9 * 0.951229, abs=1e-6)
    assert groups[1].potentials.action == "Ignore"
    assert [g.space for g in store.groups("intent:other")] == ["intent:other"]


def test_threads_can_write_and_query_together(store):
    errors = []

    def work(n):
        try:
            for i in range(20):
                store.write_many([megram(space=f"s{n}") for _ in range(10)])
                store.query_mk(f"s{n}", ENTITY)
                store.query_c(f"s{n}", ENTITY)
                store.write(megram(space=f"s{n}", level="C", k=0.0))
                store.dream()
        except Exception as exc:  # collected so the main thread can report it
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert store.summary().counts == {"M": 800, "K": 0, "C": 80, "T": 0}
    for n in range(4):
        assert store.query_mk(f"s{n}", ENTITY).attention == pytest.approx(
            (200 + 20) * 0.9, rel=1e-4
        )
