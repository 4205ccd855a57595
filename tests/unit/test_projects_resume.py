"""A project resumes from its stored state and never takes a reply twice."""

import json

import pytest
from pydantic import ValidationError

from roles.projects import ProjectState, StepRefused, step
from roles.projects.contracts import ImplementationResult, TaskPlan
from roles.projects.events import EVENT, Cancel, PlanReply, QAReply, RunReply
from roles.projects.stopping import stop
from tests.unit.projects_script import assess, kinds, one_task, plan, qa, run, scoped


def test_the_state_round_trips_through_json_and_resumes_mid_task():
    state, _ = scoped()
    state, _ = one_task(state)
    state, _ = plan(state, description="Colony API", carry_forward=["Colony UI"])
    state, _ = run(state)
    stored = json.dumps(state.to_dict())
    restored = ProjectState.from_dict(json.loads(stored))
    assert restored == state and restored.phase == "qa"
    assert qa(restored) == qa(state)


def test_a_replayed_plan_reply_is_refused_and_dispatches_nothing():
    state, _ = scoped()
    reply = PlanReply(
        request_id=state.awaiting,
        plan=TaskPlan(
            action="implement", task_description="a", implementation_plan="p"
        ),
    )
    state, actions = step(state, reply)
    assert actions[0].request_id == "t1-a1"
    with pytest.raises(StepRefused, match="does not answer the implement phase"):
        step(state, reply)
    assert state.dispatched == ["t1-a1"]


def test_an_already_dispatched_task_id_is_never_dispatched_again():
    state, _ = scoped()
    data = state.to_dict()
    data["dispatched"] = ["t1-a1"]
    with pytest.raises(StepRefused, match="t1-a1 was dispatched before"):
        plan(ProjectState.from_dict(data))


def test_a_redelivered_reply_is_refused_as_stale():
    state, _ = scoped()
    first = state.awaiting
    state, _ = one_task(state)
    stale = PlanReply(request_id=first, plan=TaskPlan(action="milestone_done"))
    with pytest.raises(StepRefused, match=f"{first} is not awaited"):
        step(state, stale)
    late = RunReply(request_id="t1-a1", result=ImplementationResult(files=["a"]))
    with pytest.raises(StepRefused, match="run reply does not answer the plan phase"):
        step(state, late)


def test_cancel_mid_task_stops_its_run_then_discards_its_work_when_it_ends():
    state, _ = scoped()
    state, _ = plan(state)
    state, actions = step(state, Cancel())
    assert kinds(actions) == ["stop_task", "finish_project"]
    assert actions[0].request_id == "t1-a1" and actions[1].status == "cancelled"
    with pytest.raises(StepRefused, match="already cancelled"):
        step(state, Cancel())
    # The stopped Run may still be writing: its work is discarded when it ends.
    ended = RunReply(request_id="t1-a1", result=ImplementationResult(files=["a"]))
    state, actions = step(state, ended)
    assert kinds(actions) == ["reset_task"] and actions[0].request_id == "t1-a1"
    assert (state.phase, state.awaiting) == ("cancelled", "")
    with pytest.raises(StepRefused, match="the project is cancelled"):
        step(state, ended)


def test_cancel_while_qa_judges_discards_the_work_at_once():
    state, _ = scoped()
    state, _ = plan(state)
    state, _ = run(state)
    state, actions = step(state, Cancel())
    assert kinds(actions) == ["reset_task", "finish_project"]
    assert actions[0].request_id == "t1-a1" and state.awaiting == ""
    late = QAReply(request_id="r3", verdict={"passed": True})
    with pytest.raises(StepRefused, match="the project is cancelled"):
        step(state, late)


def test_a_project_given_up_mid_task_awaits_its_run_to_discard_its_work():
    state, _ = scoped()
    state, _ = plan(state)
    state, actions = stop(state, "failed", "QA could not handle AskQA")
    assert kinds(actions) == ["stop_task", "finish_project"]
    assert actions[1].status == "failed" and state.phase == "failed"
    other = RunReply(request_id="t9-a1", result=ImplementationResult(files=["a"]))
    with pytest.raises(StepRefused, match="the project is failed"):
        step(state, other)
    state, actions = run(state, success=False)
    assert kinds(actions) == ["reset_task"]


def test_a_passed_task_is_committed_and_a_skip_names_no_attempt():
    state, _ = scoped()
    state, actions = one_task(state)
    assert actions[0].kind == "record_done" and actions[0].dispatch_id == "t1-a1"
    assert "reset_task" not in kinds(actions)
    state, actions = plan(state, "skip", description="Colony save")
    assert actions[0].kind == "record_done" and actions[0].dispatch_id == ""


def test_events_parse_from_json_by_kind():
    event = EVENT.validate_python(
        {"kind": "qa", "request_id": "r4", "verdict": {"passed": True}}
    )
    assert isinstance(event, QAReply) and event.verdict.passed
    with pytest.raises(ValidationError):
        EVENT.validate_python({"kind": "deploy"})


def test_a_stored_state_no_step_could_produce_is_refused():
    state, _ = scoped()
    data = state.to_dict() | {"milestone_index": 5}
    with pytest.raises(ValidationError, match="past the 2 milestones"):
        ProjectState.from_dict(data)
    with pytest.raises(ValidationError, match="needs the task in hand"):
        ProjectState.from_dict(state.to_dict() | {"phase": "implement"})


def test_a_rolled_up_window_and_a_retry_survive_the_round_trip():
    state, _ = scoped()
    for n in range(4):
        state, _ = one_task(state, f"task {n}")
    state, _ = plan(state, "milestone_done")
    state, _ = assess(state, "minor_drift", correction_hint="Mind the UI")
    for n in range(4, 9):
        state, _ = one_task(state, f"task {n}")
    state, _ = assess(state, "aligned")
    state, _ = plan(state, description="task 9")
    state, _ = run(state)
    state, _ = qa(state, passed=False)
    assert state.window.rollup.count == 2 and state.task.attempt == 2
    restored = ProjectState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert restored == state
    assert plan(restored, description="task 9 again") == plan(
        state, "implement", "task 9 again"
    )
