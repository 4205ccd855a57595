"""Potentials of MKCT memory on a real LevelDB: decay, channels, actions, recall."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory import MegramStore
from memory.potentials import derive_action
from roles.contracts import Megram
from roles.ggs.megrams import negative_feedback

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SPACE, ENTITY = "intent:deploy", "env:local"


@pytest.fixture
def store(tmp_path):
    with MegramStore(tmp_path / "memory.leveldb") as s:
        yield s


def megram(f, sigma, k=0.05, level="M", space=SPACE, entity=ENTITY, **extra):
    return Megram(
        level=level, space=space, entity=entity, f=f, sigma=sigma, k=k, **extra
    )


def days(n):
    return T0 + timedelta(days=n)


def test_fresh_megrams_sum_magnitudes_and_signed_values(store):
    store.write_many(
        [megram(0.9, 1.0), megram(0.95, -1.0), megram(0.3, 0.0, k=0.2)], now=T0
    )
    p = store.query_mk(SPACE, ENTITY, now=T0)
    assert p.attention == pytest.approx(0.9 + 0.95 + 0.3)
    assert p.decision == pytest.approx(0.9 - 0.95)
    assert p.action == "Caution"


@pytest.mark.parametrize("age", [0, 7, 10])
@pytest.mark.parametrize("k", [0.05, 0.2, 0.5])
def test_potentials_decay_exponentially_with_age_in_days(store, age, k):
    store.write_many([megram(0.8, 1.0, k=k), megram(0.6, -0.5, k=k)], now=T0)
    p = store.query_mk(SPACE, ENTITY, now=days(age))
    decay = math.exp(-k * age)
    assert p.attention == pytest.approx((0.8 + 0.6) * decay)
    assert p.decision == pytest.approx((0.8 - 0.3) * decay)


def test_fractional_days_count_in_the_decay(store):
    store.write(megram(1.0, 1.0, k=0.5), now=T0)
    p = store.query_mk(SPACE, ENTITY, now=T0 + timedelta(hours=36))
    assert p.attention == pytest.approx(math.exp(-0.5 * 1.5))


def test_each_megram_decays_from_its_own_creation(store):
    store.write(megram(0.9, 1.0), now=T0)
    store.write(megram(0.9, -1.0), now=days(7))
    p = store.query_mk(SPACE, ENTITY, now=days(10))
    assert p.decision == pytest.approx(0.9 * math.exp(-0.5) - 0.9 * math.exp(-0.15))


def test_an_empty_pair_is_ignored(store):
    p = store.query_mk(SPACE, ENTITY, now=T0)
    assert (p.attention, p.decision, p.action) == (0.0, 0.0, "Ignore")


@pytest.mark.parametrize(
    ("f", "sigma", "action"),
    [
        (0.49, 1.0, "Ignore"),
        (0.5, 0.4, "Caution"),  # att exactly 0.5, dec exactly +0.2
        (0.5, 0.41, "Exploit"),
        (0.5, -0.4, "Caution"),  # dec exactly −0.2
        (0.5, -0.41, "Avoid"),
        (0.5, 0.0, "Caution"),
    ],
)
def test_action_thresholds_hold_at_their_boundaries(store, f, sigma, action):
    store.write(megram(f, sigma), now=T0)
    assert store.query_mk(SPACE, ENTITY, now=T0).action == action


@pytest.mark.parametrize(
    ("attention", "decision", "action"),
    [
        (0.4999, 5.0, "Ignore"),
        (0.5, 0.2, "Caution"),
        (0.5, 0.2000001, "Exploit"),
        (0.5, -0.2, "Caution"),
        (0.5, -0.2000001, "Avoid"),
    ],
)
def test_derive_action_maps_the_two_channels(attention, decision, action):
    assert derive_action(attention, decision) == action


def test_query_c_stamps_recall_which_restarts_decay(store):
    rule = store.write(megram(1.0, 1.0, k=0.05, level="C"), now=T0)
    assert store.query_mk(SPACE, ENTITY, now=days(10)).attention == pytest.approx(
        math.exp(-0.5)
    )
    hits = store.query_c(SPACE, ENTITY, now=days(10))
    assert [m.id for m in hits] == [rule.id]
    assert store.query_mk(SPACE, ENTITY, now=days(10)).attention == pytest.approx(1.0)
    assert store.query_mk(SPACE, ENTITY, now=days(17)).attention == pytest.approx(
        math.exp(-0.35)
    )


def test_query_c_returns_only_c_level_newest_first(store):
    old = store.write(megram(1.0, 1.0, k=0.0, level="C"), now=T0)
    new = store.write(megram(1.0, -1.0, k=0.0, level="C"), now=days(1))
    store.write_many(
        [megram(0.9, 1.0), megram(0.9, 1.0, level="K"), megram(1, 1, 0, "T")], now=T0
    )
    store.write(megram(1.0, 1.0, k=0.0, level="C", entity="env:other"), now=T0)
    assert [m.id for m in store.query_c(SPACE, ENTITY, now=days(2))] == [
        new.id,
        old.id,
    ]


def test_query_recent_returns_newest_unconsolidated_m_and_k(store):
    ids = [store.write(megram(0.9, 1.0), now=days(i)).id for i in range(4)]
    k_level = store.write(megram(0.9, 1.0, level="K"), now=days(5))
    store.write(megram(0.9, 1.0, state="consolidated"), now=days(6))
    store.write(megram(1.0, 1.0, k=0.0, level="C"), now=days(7))
    recent = store.query_recent(SPACE, ENTITY, 3)
    assert [m.id for m in recent] == [k_level.id, ids[3], ids[2]]
    assert store.query_recent(SPACE, ENTITY, 0) == []


@pytest.mark.parametrize("n", [-1, 1.5, "3", True])
def test_query_recent_refuses_a_bad_count(store, n):
    with pytest.raises(ValueError, match="n must be"):
        store.query_recent(SPACE, ENTITY, n)


def test_queries_refuse_empty_tags_and_naive_times(store):
    with pytest.raises(ValueError, match="space"):
        store.query_mk("", ENTITY)
    with pytest.raises(ValueError, match="timezone-aware"):
        store.query_mk(SPACE, ENTITY, now=datetime(2025, 1, 1))


def test_negative_feedback_cancels_a_rules_decision(store):
    rule = store.write(megram(1.0, 1.0, k=0.0, level="C", state="Best Practice"))
    assert store.query_mk(SPACE, ENTITY, now=T0).decision == pytest.approx(1.0)
    (fb,) = negative_feedback([rule], "change_path", "rule failed in run 7", now=T0)
    fb = store.write(fb, T0)
    assert (fb.level, fb.space, fb.entity, fb.f, fb.k) == ("K", SPACE, ENTITY, 1, 0.05)
    assert (fb.sigma, fb.state) == (-1.0, "negative_feedback")
    assert "rule failed in run 7" in fb.content
    assert store.get(fb.id) == fb
    p = store.query_mk(SPACE, ENTITY, now=T0)
    assert p.decision == pytest.approx(0.0)
    assert p.action == "Caution"
    # Evidence fades like any experience; the timeless rule does not.
    assert store.query_mk(SPACE, ENTITY, now=days(30)).action == "Exploit"
