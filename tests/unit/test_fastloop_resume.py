"""The fast loop parks at a call that waits on the operator and resumes there."""

from __future__ import annotations

import json

import pytest

from roles.tools.errors import ToolPaused
from tests.unit.test_fastloop import Script, run


def test_a_pause_in_the_second_attempt_keeps_its_correction_and_trajectory(
    tmp_path,
):
    with pytest.raises(ToolPaused) as paused:
        run(Script("goodbye", ToolPaused({"kind": "call"})), tmp_path)
    state = json.loads(json.dumps(paused.value.state["fastloop"]))
    assert state["attempt"] == 2
    assert len(state["trajectory"]) == 1
    assert (
        "hello"
        in state["correction"]["what_to_do"] + state["correction"]["failed_criterion"]
    )

    script = Script("hello")
    outcome, executions, _, sent, corrections = run(script, tmp_path, resume=state)

    assert outcome.status == "matched"
    assert [attempt for _, attempt in script.seen] == [2]
    assert script.seen[0][0].failed_criterion == state["correction"]["failed_criterion"]
    assert len(outcome.gap_trajectory) == 2
    assert sent == ["hello"] and corrections == []


def test_a_resumed_last_attempt_that_fails_ends_the_loop(tmp_path):
    with pytest.raises(ToolPaused) as paused:
        run(Script("goodbye", ToolPaused()), tmp_path)
    state = paused.value.state["fastloop"]

    outcome, *_ = run(Script("goodbye again"), tmp_path, resume=state)

    assert outcome.status == "failed"
    assert len(outcome.gap_trajectory) == 2


def test_the_calls_of_earlier_attempts_go_with_the_outcome_across_a_pause(tmp_path):
    with pytest.raises(ToolPaused) as paused:
        run(Script("goodbye", ToolPaused()), tmp_path)
    state = json.loads(json.dumps(paused.value.state["fastloop"]))
    assert len(state["earlier_calls"]) == 1 and "goodbye" in state["earlier_calls"][0]

    outcome, *_ = run(Script("hello"), tmp_path, resume=state)

    assert outcome.status == "matched"
    assert outcome.earlier_calls == state["earlier_calls"]
    assert ["hello" in call for call in outcome.tool_calls] == [True]
