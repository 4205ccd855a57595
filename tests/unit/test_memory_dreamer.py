"""The Dreamer on a real LevelDB: GC, trust bankruptcy, consolidation."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory import DreamReport, MegramStore
from roles.contracts import Megram
from roles.ggs.megrams import negative_feedback

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SPACE, ENTITY = "intent:deploy", "env:local"


@pytest.fixture
def store(tmp_path):
    with MegramStore(tmp_path / "memory.leveldb") as s:
        yield s


class Distiller:
    """Record every distil call and answer with a fixed rule."""

    def __init__(self, answer="  Always dry-run first.  "):
        self.answer = answer
        self.calls = []

    def __call__(self, space, entity, signal, valence, contents):
        self.calls.append((space, entity, signal, valence, contents))
        if isinstance(self.answer, type):
            raise self.answer("model down")
        return self.answer


def megram(f=0.9, sigma=1.0, k=0.05, level="M", entity=ENTITY, **extra):
    return Megram(
        level=level, space=SPACE, entity=entity, f=f, sigma=sigma, k=k, **extra
    )


def days(n):
    return T0 + timedelta(days=n)


def levels(store):
    return {m.id: (m.level, m.k, m.state) for g in store.groups() for m in g.megrams}


# -- GC ---------------------------------------------------------------------


def test_a_fresh_refine_megram_is_collected_at_the_first_pass(store):
    refine = store.write(megram(f=0.1, sigma=0.5, k=0.5), now=T0)
    report = store.dream(now=T0 + timedelta(minutes=1))
    assert report == DreamReport(deleted=1, demoted=0, promoted=0)
    assert store.get(refine.id) is None
    assert store.summary().total == 0


def test_gc_keeps_c_and_t_levels_however_weak(store):
    kept = store.write_many(
        [megram(f=0.01, k=0.5, level="C"), megram(f=0.0, k=0.5, level="T")], now=T0
    )
    assert store.dream(now=days(100)).deleted == 0
    assert all(store.get(m.id) for m in kept)


@pytest.mark.parametrize(("age", "kept"), [(5.4, True), (5.6, False)])
def test_a_change_path_megram_lives_about_five_and_a_half_days(store, age, kept):
    # 0.3·e^(−0.2·Δt) falls below 0.1 at Δt = ln 3 / 0.2 ≈ 5.49 days.
    m = store.write(megram(f=0.3, sigma=0.0, k=0.2, level="K"), now=T0)
    store.dream(now=days(age))
    assert (store.get(m.id) is not None) is kept


def test_gc_measures_age_from_creation_even_after_a_recall(store):
    rule = store.write(megram(f=1.0, k=0.0, level="C"), now=T0)
    store.write(megram(f=0.95, sigma=-1.0), now=days(49))
    store.query_c(SPACE, ENTITY, now=days(50))
    assert store.dream(now=days(50)).demoted == 1
    # Recall-aware weight is 1.0, but from creation 1·e^(−0.05·50) ≈ 0.082 < 0.1.
    assert store.dream(now=days(50)).deleted == 1
    assert store.get(rule.id) is None


# -- trust bankruptcy -------------------------------------------------------------


def test_a_best_practice_contradicted_by_failures_is_demoted_to_k(store):
    rule = store.write(megram(f=1.0, k=0.0, level="C", state="Best Practice"), T0)
    store.write_many([megram(f=0.95, sigma=-1.0)] * 2, now=days(1))
    report = store.dream(now=days(1))
    assert report.demoted == 1
    demoted = store.get(rule.id)
    assert (demoted.level, demoted.k, demoted.created_at) == ("K", 0.05, T0)
    assert store.summary().counts == {"M": 2, "K": 1, "C": 0, "T": 0}
    assert store.query_c(SPACE, ENTITY, now=days(1)) == []


def test_a_best_practice_with_agreeing_or_no_evidence_keeps_its_rank(store):
    alone = store.write(megram(f=1.0, k=0.0, level="C", entity="e:alone"), T0)
    backed = store.write(megram(f=1.0, k=0.0, level="C"), now=T0)
    store.write(megram(f=0.9, sigma=1.0), now=T0)
    assert store.dream(now=days(1)).demoted == 0
    assert store.get(alone.id).level == store.get(backed.id).level == "C"


def test_a_constraint_is_demoted_when_its_pair_turns_positive(store):
    rule = store.write(megram(f=1.0, sigma=-1.0, k=0.0, level="C"), now=T0)
    store.write(megram(f=0.9, sigma=1.0), now=days(1))
    assert store.dream(now=days(1)).demoted == 1
    assert store.get(rule.id).level == "K"


def test_a_freshly_distilled_constraint_survives_the_next_pass(store):
    store.write_many([megram(f=0.95, sigma=-1.0, content="rm failed")] * 6, T0)
    assert store.dream(now=T0, distil=Distiller()).promoted == 1
    (rule,) = store.query_c(SPACE, ENTITY, now=T0)
    assert (rule.state, rule.sigma, rule.k, rule.f) == ("Constraint", -1.0, 0.0, 1.0)
    assert store.query_mk(SPACE, ENTITY, now=T0).decision < 0
    for later in (T0, days(1)):
        assert store.dream(now=later, distil=Distiller()).demoted == 0
    assert store.get(rule.id).level == "C"


def test_negative_feedback_bankrupts_the_rule_it_answers(store):
    rule = store.write(megram(f=1.0, k=0.0, level="C", state="Best Practice"), T0)
    (feedback,) = negative_feedback([rule], "change_path", "failed again")
    feedback = store.write(feedback, days(1))
    assert store.dream(now=days(1)).demoted == 1
    # The feedback is evidence, not a rule: the rule alone loses its timelessness.
    assert store.get(rule.id).level == "K"
    assert store.get(feedback.id).level == "K"
    assert store.query_c(SPACE, ENTITY, now=days(1)) == []


# -- consolidation -------------------------------------------------------------


def five(sigmas, f=1.0):
    return [
        megram(f=f, sigma=s, k=0.05, content=f"run {i}") for i, s in enumerate(sigmas)
    ]


@pytest.mark.parametrize(
    ("sigmas", "signal"),
    [([1, 1, 1, 0, 0], "Best Practice"), ([-1, -1, -1, 0, 0], "Constraint")],
)
def test_consolidation_promotes_exactly_at_the_thresholds(store, sigmas, signal):
    sources = store.write_many(five(sigmas), now=T0)
    distil = Distiller()
    assert store.dream(now=T0, distil=distil).promoted == 1
    (call,) = distil.calls
    assert call[:4] == (SPACE, ENTITY, signal, 3.0 if sigmas[0] > 0 else -3.0)
    (rule,) = store.query_c(SPACE, ENTITY, now=T0)
    assert rule.content == "Always dry-run first."
    assert (rule.state, rule.f, rule.k) == (signal, 1.0, 0.0)
    assert rule.sigma == (1.0 if signal == "Best Practice" else -1.0)
    assert rule.created_at == T0
    assert all(store.get(m.id).state == "consolidated" for m in sources)
    # Sources keep their indexes, so they still count in the potentials.
    assert store.query_mk(SPACE, ENTITY, now=T0).attention == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("sigmas", "f"),
    [
        ([1, 1, 1, 0, 0], 0.999),  # attention 4.995 < 5.0
        ([1, 1, 0.999, 0, 0], 1.0),  # decision 2.999 < 3.0
        ([-1, -1, -0.999, 0, 0], 1.0),
    ],
)
def test_consolidation_does_not_promote_below_the_thresholds(store, sigmas, f):
    store.write_many(five(sigmas, f=f), now=T0)
    distil = Distiller()
    assert store.dream(now=T0, distil=distil).promoted == 0
    assert distil.calls == []
    assert store.summary().counts["C"] == 0


def test_consolidation_uses_decayed_sums(store):
    store.write_many(five([1, 1, 1, 0, 0]), now=T0)
    assert store.dream(now=days(1), distil=Distiller()).promoted == 0


def test_consolidation_is_skipped_without_a_distil_function(store):
    sources = store.write_many(five([1, 1, 1, 0, 0]), now=T0)
    assert store.dream(now=T0).promoted == 0
    assert all(store.get(m.id).state == "" for m in sources)


@pytest.mark.parametrize("answer", ["", "   ", None, RuntimeError])
def test_a_failed_or_empty_distillation_skips_the_group(store, answer):
    sources = store.write_many(five([1, 1, 1, 0, 0]), now=T0)
    assert store.dream(now=T0, distil=Distiller(answer)).promoted == 0
    assert store.summary().counts["C"] == 0
    assert all(store.get(m.id).state == "" for m in sources)


def test_dream_refuses_a_distil_that_is_not_callable(store):
    with pytest.raises(TypeError, match="distil must be callable"):
        store.dream(now=T0, distil="summarise")


def test_one_failing_group_does_not_stop_the_others(store):
    store.write_many(five([1, 1, 1, 0, 0]), now=T0)
    store.write_many(
        [megram(f=1.0, sigma=1.0, entity="env:b") for _ in range(5)], now=T0
    )

    def distil(space, entity, signal, valence, contents):
        if entity == ENTITY:
            raise RuntimeError("model down")
        return "Use the b environment."

    assert store.dream(now=T0, distil=distil).promoted == 1
    assert [m.content for m in store.query_c(SPACE, "env:b", now=T0)] == [
        "Use the b environment."
    ]


def test_at_most_one_rule_per_group_per_pass_and_none_from_consolidated(store):
    store.write_many([megram(f=1.0, sigma=1.0) for _ in range(20)], now=T0)
    assert store.dream(now=T0, distil=Distiller()).promoted == 1
    assert store.dream(now=T0, distil=Distiller()).promoted == 0
    assert store.summary().counts["C"] == 1


def test_distil_gets_the_ten_newest_non_empty_contents(store):
    for i in range(12):
        store.write(megram(f=1.0, content=f"run {i}"), now=T0 + timedelta(hours=i))
    store.write(megram(f=1.0, content="  "), now=T0 + timedelta(hours=13))
    distil = Distiller()
    now = T0 + timedelta(hours=13)
    assert store.dream(now=now, distil=distil).promoted == 1
    contents = distil.calls[0][4]
    assert contents == [f"run {i}" for i in range(11, 1, -1)]


def test_a_rule_rests_on_the_runs_of_the_experiences_it_was_distilled_from(store):
    for i in range(12):
        store.write(
            megram(f=1.0, content=f"run {i}", runs=[f"run-{i}"]),
            now=T0 + timedelta(hours=i),
        )
    store.write(megram(f=1.0, content="no run named"), now=T0 + timedelta(hours=12))
    assert store.dream(now=T0 + timedelta(hours=13), distil=Distiller()).promoted == 1
    (rule,) = store.query_c(SPACE, ENTITY)
    # The ten newest contents were its sources: their runs, newest first.
    assert rule.runs == [f"run-{i}" for i in range(11, 2, -1)]
    assert store.get(rule.id).runs == rule.runs


def test_a_megram_keeps_the_runs_it_rests_on_and_one_without_names_none(store):
    named = store.write(megram(content="counted", runs=["r1"]), now=T0)
    bare = store.write(megram(content="counted"), now=T0)
    assert store.get(named.id).runs == ["r1"]
    assert store.get(bare.id).runs == []
    with pytest.raises(ValueError):
        megram(runs=[f"r{i}" for i in range(21)])


def test_consolidation_ignores_c_level_and_consolidated_megrams(store):
    store.write_many([megram(f=1.0, sigma=1.0, k=0.0, level="C")] * 5, now=T0)
    store.write_many([megram(f=1.0, state="consolidated")] * 5, now=T0)
    assert store.dream(now=T0, distil=Distiller()).promoted == 0


def test_a_pass_runs_gc_then_bankruptcy_then_consolidation(store):
    refine = store.write(megram(f=0.1, sigma=0.5, k=0.5), now=T0)
    rule = store.write(megram(f=1.0, k=0.0, level="C", entity="e:r"), now=T0)
    store.write(megram(f=0.9, sigma=-1.0, entity="e:r"), now=T0)
    store.write_many(five([-1, -1, -1, 0, 0]), now=days(1))
    report = store.dream(now=days(1), distil=Distiller())
    assert report == DreamReport(deleted=1, demoted=1, promoted=1)
    assert store.get(refine.id) is None
    assert store.get(rule.id).level == "K"
    # The demoted rule decays from creation like any K Megram.
    p = store.query_mk(SPACE, "e:r", now=days(1))
    assert p.attention == pytest.approx((1.0 + 0.9) * math.exp(-0.05))


def test_a_member_forgotten_while_its_rule_is_distilled_stays_forgotten(store):
    members = store.write_many([megram(f=1.0, sigma=1.0) for _ in range(6)], now=T0)
    gone = members[0]

    def distil(space, entity, signal, valence, contents):
        assert store.forget(gone.id) == 1
        return "Always dry-run first."

    assert store.dream(now=T0, distil=distil).promoted == 1
    assert store.get(gone.id) is None
    assert store.query_mk(SPACE, ENTITY, now=T0).attention == pytest.approx(5 + 1.0)
    kept = [store.get(m.id) for m in members[1:]]
    assert [m.state for m in kept] == ["consolidated"] * 5


def test_consolidation_rewrites_only_the_state_of_its_members(store):
    members = store.write_many([megram(f=1.0, sigma=1.0) for _ in range(5)], now=T0)
    before = store.query_mk(SPACE, ENTITY, now=T0)
    assert store.dream(now=T0, distil=Distiller()).promoted == 1
    for m in members:
        after = store.get(m.id)
        assert after.state == "consolidated"
        assert after.model_dump(exclude={"state"}) == m.model_dump(exclude={"state"})
    # The pair still sums its members, now with the rule (f 1, sigma 1, k 0).
    p = store.query_mk(SPACE, ENTITY, now=T0)
    assert p.attention == pytest.approx(before.attention + 1.0)


def test_a_megram_written_while_its_group_is_distilled_stays_open(store):
    store.write_many([megram(f=1.0, sigma=1.0) for _ in range(6)], now=T0)
    late = []

    def distil(space, entity, signal, valence, contents):
        late.append(store.write(megram(f=1.0, content="later"), now=days(1)))
        return "Always dry-run first."

    assert store.dream(now=T0, distil=distil).promoted == 1
    # Not among the rule's sources, so not consolidated by it.
    assert store.get(late[0].id).state != "consolidated"


def test_no_rule_when_every_member_is_forgotten_during_the_distil_call(store):
    members = store.write_many([megram(f=1.0, sigma=1.0) for _ in range(6)], now=T0)

    def distil(space, entity, signal, valence, contents):
        for m in members:
            store.forget(m.id)
        return "Always dry-run first."

    assert store.dream(now=T0, distil=distil).promoted == 0
    assert store.summary().counts["C"] == 0


def test_groups_of_many_pairs_are_consolidated_in_one_pass(store):
    # Members are found by one scan over all records, not pair by pair.
    for n in range(30):
        store.write_many(
            [megram(f=1.0, sigma=-1.0, entity=f"env:{n}") for _ in range(6)], now=T0
        )
    store.write_many([megram(f=1.0, sigma=0.0, entity="env:calm")] * 6, now=T0)
    assert store.dream(now=T0, distil=Distiller()).promoted == 30
    states = levels(store)
    consolidated = [s for level, _, s in states.values() if s == "consolidated"]
    assert len(consolidated) == 30 * 6
    calm = store.groups()
    assert all(
        m.state != "consolidated"
        for g in calm
        if g.entity == "env:calm"
        for m in g.megrams
    )
