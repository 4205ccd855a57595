"""The write-back rule read back: feedback weighs on its rule, never speaks itself."""

from datetime import UTC, datetime, timedelta

import pytest

from memory import MegramStore
from roles.contracts import Megram, MemoryRecall
from roles.ggs.megrams import negative_feedback
from roles.planning.calibration import calibrate

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
SPACE, ENTITY = "intent:deploy", "env:local"


@pytest.fixture
def store(tmp_path):
    with MegramStore(tmp_path / "memory.leveldb") as s:
        yield s


def rule():
    return Megram(
        level="C",
        space=SPACE,
        entity=ENTITY,
        content="Always restart nginx after deploying.",
        state="Best Practice",
        f=1.0,
        sigma=1.0,
        k=0.0,
    )


def recall_of(store, now):
    p = store.query_mk(SPACE, ENTITY, now=now)
    return MemoryRecall(
        task_id="deploy",
        space=SPACE,
        entity=ENTITY,
        sops=store.query_c(SPACE, ENTITY, now=now),
        recent=store.query_recent(SPACE, ENTITY, 10),
        attention=p.attention,
        decision=p.decision,
        action=p.action,
    )


def test_feedback_lowers_its_rules_decision_and_is_never_injected(store):
    sop = store.write(rule(), T0)
    assert store.query_mk(SPACE, ENTITY, now=T0).decision == pytest.approx(1.0)
    store.write_many(negative_feedback([sop], "change_path", "nginx failed", now=T1))
    assert store.query_mk(SPACE, ENTITY, now=T1).decision == pytest.approx(0.0)
    assert [m.id for m in store.query_c(SPACE, ENTITY, now=T1)] == [sop.id]
    calibration = calibrate(recall_of(store, T1))
    assert "Followed, then the round failed" not in calibration.text
    assert calibration.should_prefer == ["Always restart nginx after deploying."]
    assert calibration.injected_sops == [sop.id]


def test_trust_bankruptcy_demotes_the_rule_its_feedback_contradicts(store):
    sop = store.write(rule(), T0)
    store.write_many(negative_feedback([sop], "abandon", "gave up", now=T1))
    assert store.dream(now=T1).demoted == 1
    assert store.get(sop.id).level == "K"
    assert store.query_c(SPACE, ENTITY, now=T1) == []
    assert "Followed, then the round failed" not in calibrate(recall_of(store, T1)).text


def test_a_rule_with_more_support_survives_one_failed_round(store):
    sop = store.write(rule(), T0)
    support = Megram(
        space=SPACE,
        entity=ENTITY,
        content="ok",
        state="accept",
        f=0.9,
        sigma=1.0,
        k=0.05,
    )
    store.write_many([support, support.model_copy()], T0)
    store.write_many(negative_feedback([sop], "change_path", "once", now=T1))
    assert store.dream(now=T1).demoted == 0
    assert store.get(sop.id).level == "C"


def test_feedback_stored_as_a_rule_by_an_older_version_is_not_injected():
    old = rule().model_copy(
        update={"state": "negative_feedback", "sigma": -1.0, "content": "Followed"}
    )
    calibration = calibrate(
        MemoryRecall(task_id="deploy", space=SPACE, entity=ENTITY, sops=[old])
    )
    assert calibration.text == ""


def example(content="Succeeded. Worked: shell:systemctl restart nginx → ok."):
    return Megram(
        space=SPACE,
        entity=ENTITY,
        content=content,
        state="accept",
        f=0.9,
        sigma=1.0,
        k=0.05,
    )


def test_a_worked_example_an_abandoned_run_followed_is_offered_no_more(store):
    worked = store.write(example(), T0)
    given = calibrate(recall_of(store, T0))
    assert given.injected_examples == [worked.id]
    assert "systemctl restart nginx" in given.text
    store.write_many(negative_feedback([worked], "abandon", "gave up", now=T1))
    again = calibrate(recall_of(store, T1))
    assert "systemctl restart nginx" not in again.text
    assert again.injected_examples == []
    assert "Followed, then the round failed" not in again.text


def test_a_newer_success_of_the_pair_offers_the_approach_again(store):
    old = store.write(example(), T0)
    store.write_many(negative_feedback([old], "abandon", "gave up", now=T1))
    later = T1 + timedelta(minutes=5)
    newer = store.write(
        example("Succeeded. Worked: shell:nginx -s reload → ok."), later
    )
    given = calibrate(recall_of(store, later))
    assert given.injected_examples == [newer.id]
    assert "nginx -s reload" in given.text
    assert "systemctl restart nginx" not in given.text
