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


def test_an_abandon_on_a_judged_approach_feeds_back_to_the_worked_examples_too():
    from roles.contracts import SubTaskOutcome
    from roles.ggs.megrams import fed_back

    example = RULE.model_copy(update={"level": "M", "state": "accept"})

    def failed(infrastructure: bool) -> SubTaskOutcome:
        return SubTaskOutcome(
            subtask_id="s", parent_task_id="t", intent="i", status="failed",
            failure_reason="infrastructure: model endpoint" if infrastructure
            else "logical: wrong count",
        )  # fmt: skip

    assert fed_back([RULE], [example], "abandon", [failed(False)]) == [RULE, example]
    # A failing round that goes on, or an abandon the machinery caused, spares it.
    assert fed_back([RULE], [example], "refine", [failed(False)]) == [RULE]
    assert fed_back([RULE], [example], "abandon", [failed(True)]) == [RULE]
