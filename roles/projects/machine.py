"""A project's state machine: one pure ``step(state, event)``.

The shell loads the ``ProjectState``, calls ``step``, stores the new state and
only then carries out the returned actions, in order. A worker killed at any
point resumes from the last stored state: a reply it had not stored is taken
again, a Run whose dispatch id was stored is started (or found) under that id,
and a dispatch id already handed out is refused, so no task runs twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roles.projects.assessment import on_assessor, on_verify
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.contracts import (
    DoneEntry,
    ImplementationResult,
    QAVerdict,
    TaskPlan,
    read,
)
from roles.projects.events import (
    Action,
    Cancel,
    DispatchTask,
    RecordDone,
    RecordEscalation,
    Reply,
)
from roles.projects.routing import (
    after_mark_complete,
    after_qa,
    after_task_planner,
    escalate,
    failed_run_verdict,
    skipped_retry_verdict,
)
from roles.projects.state import (
    EXPECTS,
    SKIPPED,
    TERMINAL,
    ProjectState,
    Result,
    StepRefused,
    Task,
    ask_assessor,
    ask_qa,
    ask_scope_agent,
    ask_task_planner,
    update,
)
from roles.projects.stopping import cancel, is_stopped_run, on_stopped_run, reset
from roles.projects.verification import claim_note
from roles.projects.window import (
    add_done,
    clear_carry_forward,
    with_carry_forward,
)


def new_project(
    user_request: str, verify: Sequence[str] = (), protected: Sequence[str] = ()
) -> Result:
    """Return a new project's state and its first action: ask the ScopeAgent.

    ``verify`` and ``protected`` are the project's own verification commands
    and protected paths, added to every milestone's; a bad one raises a
    ``pydantic.ValidationError`` (a ValueError) naming it.
    """
    state = ProjectState(
        user_request=user_request, verify=list(verify), protected=list(protected)
    )
    return ask_scope_agent(state)


def step(
    state: ProjectState, event: Reply | Cancel, config: ProjectConfig = DEFAULT_CONFIG
) -> Result:
    """Return the state after ``event`` and the actions to carry out, in order.

    Raise ``StepRefused`` for an event the project is not waiting for: a reply
    to another request (stale or redelivered), a reply of the wrong kind, any
    reply after the project ended (but the end of the Run a stopped project
    still awaits), or a dispatch id handed out before.
    """
    if isinstance(event, Cancel):
        return cancel(state)
    if is_stopped_run(state, event):
        return on_stopped_run(state)
    _check_awaited(state, event)
    handlers = {
        "scope": _on_scope,
        "plan": _on_plan,
        "run": _on_run,
        "qa": _on_qa,
        "assessor": on_assessor,
        "verify": on_verify,
    }
    return handlers[event.kind](state, event, config)


def _check_awaited(state: ProjectState, event: Reply) -> None:
    if state.phase in TERMINAL:
        raise StepRefused(f"the project is {state.phase}; a {event.kind} reply is late")
    expected = EXPECTS[state.phase]
    if event.kind != expected:
        raise StepRefused(
            f"a {event.kind} reply does not answer the {state.phase} phase, "
            f"which awaits the {expected} reply to {state.awaiting}"
        )
    if event.request_id != state.awaiting:
        raise StepRefused(
            f"{event.request_id} is not awaited (the project awaits "
            f"{state.awaiting}): a stale or repeated reply"
        )


def _on_scope(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    # Completed milestones and the done list are completed work: a re-scope
    # replaces the current and later milestones only.
    kept = state.milestones[: state.milestone_index]
    state = update(
        state,
        remit=event.scope.remit,
        milestones=[*kept, *event.scope.milestones],
        window=clear_carry_forward(state.window),
        task=None,
        correction_hint="",
        tasks_since_review=0,
    )
    return ask_task_planner(state)


def _on_plan(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    plan: TaskPlan = event.plan
    window = with_carry_forward(state.window, plan.carry_forward, config)
    state = update(state, window=window)
    route = after_task_planner(plan)
    if route == "implementor":
        # Only work restarts the count of refused claims: a skip changes nothing.
        state = update(state, claims=0, skips=0)
        return _dispatch(*_task_for(state, plan))
    if route == "mark_complete" and state.task is not None and state.task.attempt > 1:
        return _judge(state, skipped_retry_verdict(config), config)
    if route == "mark_complete":
        state, task = _task_for(state, plan)
        entry = _entry(task, SKIPPED, config)
        return _complete(update(state, skips=state.skips + 1), entry, config)
    if route == "mark_failed":
        problem = escalate(
            "abort",
            milestone_index=state.milestone_index,
            task_id=state.task.task_id if state.task else None,
            detail=plan.escalation_context,
            config=config,
        )
        actions = (RecordEscalation(event=problem),)
        return ask_assessor(state, "abort", plan.escalation_context, actions)
    state = update(state, claims=state.claims + 1)
    return ask_assessor(state, "milestone_done", _claim_note(state), ())


def _claim_note(state: ProjectState) -> str:
    """Return what the Assessor is told of the claimed milestone's verification."""
    return claim_note(state.milestone_index + 1, state.commands())


def _task_for(state: ProjectState, plan: TaskPlan) -> tuple[ProjectState, Task]:
    """Return the task this plan is for: the one in hand on a retry, else a new one."""
    if state.task is not None:
        task = state.task.model_copy(
            update={
                "description": plan.task_description or state.task.description,
                "implementation_plan": plan.implementation_plan,
            }
        )
        return state, task
    number = state.tasks + 1
    task = Task(
        task_id=f"t{number}",
        description=plan.task_description,
        implementation_plan=plan.implementation_plan,
    )
    return update(state, tasks=number), task


def _dispatch(state: ProjectState, task: Task) -> Result:
    dispatch_id = task.dispatch_id
    if dispatch_id in state.dispatched:
        raise StepRefused(f"{dispatch_id} was dispatched before; it never runs twice")
    state = update(
        state,
        task=task,
        phase="implement",
        awaiting=dispatch_id,
        dispatched=[*state.dispatched, dispatch_id],
    )
    run = DispatchTask(
        request_id=dispatch_id,
        task_id=task.task_id,
        attempt=task.attempt,
        description=task.description,
        implementation_plan=task.implementation_plan,
    )
    return state, [run]


def _on_run(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    result: ImplementationResult = event.result
    task = state.task.model_copy(update={"result": result})
    state = update(state, task=task)
    if not result.success:
        return _judge(state, failed_run_verdict(result, config), config)
    return ask_qa(state)


def _on_qa(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    return _judge(state, event.verdict, config)


def _judge(state: ProjectState, verdict: QAVerdict, config: ProjectConfig) -> Result:
    task = state.task
    route = after_qa(verdict, task.attempt, config)
    if route == "mark_complete":
        summary = (task.result and task.result.result_summary) or verdict.feedback
        state = update(state, changed_tasks=state.changed_tasks + 1)
        entry = _entry(task, summary, config)
        return _complete(state, entry, config, task.dispatch_id)
    trigger = "qa_failed" if route == "increment_attempt" else "max_attempts"
    problem = escalate(
        trigger,
        milestone_index=state.milestone_index,
        task_id=task.task_id,
        detail=verdict.feedback,
        config=config,
    )
    # The attempt's work is not kept: the next one starts from the last commit
    # (an attempt never dispatched, a skip on a retry, left nothing to reset).
    actions = (RecordEscalation(event=problem),)
    if task.dispatch_id in state.dispatched:
        actions = (reset(task, verdict.feedback), *actions)
    if route == "increment_attempt":
        retry = task.model_copy(
            update={
                "attempt": task.attempt + 1,
                "qa_feedback": verdict.feedback,
                "result": None,
            }
        )
        return ask_task_planner(update(state, task=retry), actions)
    return ask_assessor(state, "max_attempts", verdict.feedback, actions)


def _entry(task: Task, summary: str, config: ProjectConfig) -> DoneEntry:
    data = {
        "task_id": task.task_id,
        "description": task.description,
        "result_summary": summary,
    }
    return read(DoneEntry, data, config)


def _complete(
    state: ProjectState, entry: DoneEntry, config: ProjectConfig, dispatch_id: str = ""
) -> Result:
    state = update(
        state,
        task=None,
        window=add_done(state.window, entry, config),
        tasks_since_review=state.tasks_since_review + 1,
        completed_tasks=state.completed_tasks + 1,
    )
    done = RecordDone(
        milestone_index=state.milestone_index, entry=entry, dispatch_id=dispatch_id
    )
    actions = (done,)
    if state.skips >= config.max_skips:
        return _skips_as_claim(state, actions)
    if after_mark_complete(state.tasks_since_review, config) == "assessor":
        return ask_assessor(state, "periodic", "", actions)
    return ask_task_planner(state, actions)


def _skips_as_claim(state: ProjectState, actions: tuple[Action, ...]) -> Result:
    """Ask the Assessor whether skipped tasks mean the milestone is done.

    Every skip says the task's work is already there; several in a row with no
    task run say it of the milestone. The Assessor judges that as a "done"
    claim, so a refusal counts toward the refused claims' bound.
    """
    context = (
        f"The TaskPlanner skipped {state.skips} tasks in a row as already done "
        "and ran none: judge whether the milestone's work is there. "
        + _claim_note(state)
    )
    state = update(state, skips=0, claims=state.claims + 1)
    return ask_assessor(state, "milestone_done", context, actions)
