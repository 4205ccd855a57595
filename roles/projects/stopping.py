"""What a project does with work it does not keep, and when it stops.

A task attempt's work is committed only when QA passes it (``RecordDone``).
An attempt that fails (its Run gave up, or QA refused it) or is stopped is
discarded with ``ResetTask``: the shell keeps its diff aside and resets the
directory to the last commit, so the next attempt starts clean. A project
stopped while a task's Run works (a cancel, or a handler that keeps failing)
still awaits that Run's end, and discards its work only then, once the Run has
stopped writing.
"""

from __future__ import annotations

from typing import Literal

from roles.projects.events import FinishProject, Reply, ResetTask, StopTask
from roles.projects.state import (
    TERMINAL,
    ProjectState,
    Result,
    StepRefused,
    Task,
    update,
)

REASON_CHARS = 300


def reset(task: Task, reason: str) -> ResetTask:
    """Return the order to discard the work of ``task``'s current attempt."""
    return ResetTask(
        request_id=task.dispatch_id,
        task_id=task.task_id,
        reason=reason[:REASON_CHARS],
    )


def stop(
    state: ProjectState, status: Literal["cancelled", "failed"], reason: str
) -> Result:
    """Return the project ended now as ``status``, and the actions to carry out.

    A Run in progress is stopped and still awaited (its work is discarded when
    it ends); work QA was judging is discarded at once.
    """
    if state.phase in TERMINAL:
        raise StepRefused(f"the project is already {state.phase}")
    actions: list = []
    awaiting = ""
    if state.phase == "implement":
        actions.append(StopTask(request_id=state.awaiting))
        awaiting = state.awaiting
    elif state.phase == "qa":
        actions.append(reset(state.task, f"the project was {status}: {reason}"))
    finish = FinishProject(status=status, reason=reason)
    return update(state, phase=status, awaiting=awaiting), [*actions, finish]


def cancel(state: ProjectState) -> Result:
    """Return the project cancelled by its owner, and the actions to carry out."""
    return stop(state, "cancelled", "cancelled by its owner")


def is_stopped_run(state: ProjectState, event: Reply) -> bool:
    """Return True for the end of the Run a stopped project still awaits."""
    return (
        state.phase in TERMINAL
        and event.kind == "run"
        and bool(state.awaiting)
        and event.request_id == state.awaiting
        and state.task is not None
    )


def on_stopped_run(state: ProjectState) -> Result:
    """Return the stopped project awaiting nothing more, and its Run's reset."""
    why = f"the project was {state.phase} while its Run worked"
    return update(state, awaiting=""), [reset(state.task, why)]
