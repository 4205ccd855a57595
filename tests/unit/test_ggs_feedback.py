"""The write-back rule: SOPs followed by a failing round get negative feedback."""

from roles.contracts import Megram
from roles.ggs.megrams import negative_feedback

RULE = Megram(
    id="r1",
    level="C",
    space="intent:deploy",
    entity="env:local",
    content="always run the tests first",
    state="Best Practice",
    f=1.0,
    sigma=1.0,
    k=0.0,
)


def test_failing_round_writes_k_level_evidence_against_each_followed_rule():
    [feedback] = negative_feedback([RULE], "change_path", "tests failed")
    assert (feedback.level, feedback.space, feedback.entity) == (
        "K",
        "intent:deploy",
        "env:local",
    )
    assert (feedback.f, feedback.sigma, feedback.k) == (1.0, -1.0, 0.05)
    assert feedback.state == "negative_feedback"
    assert "change_path" in feedback.content and "tests failed" in feedback.content


def test_successful_round_writes_no_feedback():
    assert negative_feedback([RULE], "accept", "") == []
    assert negative_feedback([RULE], "success", "") == []


def test_abandon_counts_as_failing():
    assert len(negative_feedback([RULE, RULE], "abandon", "gave up")) == 2
