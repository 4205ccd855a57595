"""A project's state as plain data, and the requests that move it to a phase.

``ProjectState`` is what the shell stores on the Project row (``to_dict``) and
loads back (``from_dict``); ``roles.projects.machine.step`` moves it. Phases
name who is awaited, and ``awaiting`` the id of the one reply ``step`` takes::

    scope → plan → implement → qa → plan … → assess → plan | scope | verify
    verify → plan | scope | complete (the milestone's commands at the commit)

Request ids count up (``r1``, ``r2``…) and a task's Run is requested under its
dispatch id (``t3-a2``: task 3, attempt 2), so a restored state asks again
with the same ids and the shell can find what it already started.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from roles.contract_base import Contract, NonEmpty
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.contracts import (
    AssessTrigger,
    ImplementationResult,
    Milestone,
    read,
)
from roles.projects.events import (
    Action,
    AskAssessor,
    AskQA,
    AskScopeAgent,
    AskTaskPlanner,
    VerifyMilestone,
)
from roles.projects.verification import Commands, Protected
from roles.projects.window import Window, assessor_view, planner_view

Phase = Literal[
    "scope",
    "plan",
    "implement",
    "qa",
    "assess",
    "verify",
    "complete",
    "failed",
    "cancelled",
]
TERMINAL = frozenset({"complete", "failed", "cancelled"})
WORKING = frozenset({"plan", "implement", "qa", "assess", "verify"})
EXPECTS = {
    "scope": "scope",
    "plan": "plan",
    "implement": "run",
    "qa": "qa",
    "assess": "assessor",
    "verify": "verify",
}
SKIPPED = "Skipped: no work was needed."


class StepRefused(ValueError):
    """An event the project cannot take now; the state it was given is unchanged."""


class Task(Contract):
    """The task in hand: its id, its latest plan, and which attempt this is."""

    model_config = ConfigDict(frozen=True)

    task_id: NonEmpty
    description: str
    implementation_plan: str = ""
    attempt: int = Field(default=1, ge=1)
    qa_feedback: str = ""
    result: ImplementationResult | None = None

    @property
    def dispatch_id(self) -> str:
        """Return the id this attempt's Run is started under."""
        return f"{self.task_id}-a{self.attempt}"


class ProjectState(Contract):
    """Everything a project remembers between events, as JSON-ready data."""

    model_config = ConfigDict(frozen=True)

    user_request: NonEmpty
    # The project's own verification commands and protected paths (given when
    # it was created), added to every milestone's.
    verify: Commands = Field(default_factory=list)
    protected: Protected = Field(default_factory=list)
    phase: Phase = "scope"
    awaiting: str = ""
    requests: int = Field(default=0, ge=0)
    tasks: int = Field(default=0, ge=0)
    remit: str = ""
    milestones: list[Milestone] = Field(default_factory=list)
    milestone_index: int = Field(default=0, ge=0)
    window: Window = Field(default_factory=Window)
    task: Task | None = None
    correction_hint: str = ""
    tasks_since_review: int = Field(default=0, ge=0)
    completed_tasks: int = Field(default=0, ge=0)
    # Tasks QA passed on files their Run changed (a skip changes nothing).
    changed_tasks: int = Field(default=0, ge=0)
    rescopes: int = Field(default=0, ge=0)
    # milestone_done claims in a row that the Assessor did not accept.
    claims: int = Field(default=0, ge=0)
    # Tasks skipped in a row since a task last ran (work in hand elsewhere).
    skips: int = Field(default=0, ge=0)
    dispatched: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> ProjectState:
        """Refuse a stored state no step could have produced."""
        if self.requests and self.phase not in TERMINAL and not self.awaiting:
            raise ValueError(f"phase {self.phase!r} must await a reply")
        if self.phase in WORKING and self.milestone_index >= len(self.milestones):
            raise ValueError(
                f"milestone_index {self.milestone_index} is past the "
                f"{len(self.milestones)} milestones"
            )
        if self.phase in ("implement", "qa") and self.task is None:
            raise ValueError(f"phase {self.phase!r} needs the task in hand")
        if self.phase == "qa" and self.task.result is None:
            raise ValueError("phase 'qa' needs the task's Run result")
        return self

    @property
    def milestone(self) -> Milestone:
        """Return the milestone being worked on."""
        return self.milestones[self.milestone_index]

    def commands(self) -> list[str]:
        """Return the current milestone's verification commands, the project's
        first."""
        return list(dict.fromkeys([*self.verify, *self.milestone.verify]))

    def checked_milestone(self) -> Milestone:
        """Return the current milestone with every command its done needs, the
        project's too, as the TaskPlanner and the Assessor are shown it."""
        return self.milestone.model_copy(update={"verify": self.commands()})

    def protected_paths(self) -> list[str]:
        """Return the current milestone's declared protected paths."""
        return list(dict.fromkeys([*self.protected, *self.milestone.protected]))

    def to_dict(self) -> dict[str, Any]:
        """Return the state as plain JSON data for the Project row."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], config: ProjectConfig = DEFAULT_CONFIG
    ) -> ProjectState:
        """Return the state stored by ``to_dict``; raise ValidationError if bad."""
        return read(cls, data, config)


Result = tuple[ProjectState, list[Action]]


def update(state: ProjectState, **changes: Any) -> ProjectState:
    """Return a copy of ``state`` with ``changes``; the given state stays as it was."""
    return state.model_copy(update=changes)


def _awaiting(state: ProjectState, phase: str) -> tuple[ProjectState, str]:
    number = state.requests + 1
    rid = f"r{number}"
    return update(state, requests=number, phase=phase, awaiting=rid), rid


def ask_scope_agent(
    state: ProjectState, divergence: str = "", actions: tuple[Action, ...] = ()
) -> Result:
    """Return the state awaiting the ScopeAgent, and the request after ``actions``."""
    state, rid = _awaiting(state, "scope")
    ask = AskScopeAgent(
        request_id=rid,
        user_request=state.user_request,
        prior_work=prior_work(state),
        divergence_analysis=divergence,
    )
    return state, [*actions, ask]


def ask_task_planner(state: ProjectState, actions: tuple[Action, ...] = ()) -> Result:
    """Return the state awaiting the TaskPlanner, and its view of the window."""
    state, rid = _awaiting(state, "plan")
    task = state.task
    view = planner_view(
        state.window,
        state.checked_milestone(),
        qa_feedback=task.qa_feedback if task else "",
        correction_hint=state.correction_hint,
        attempt=task.attempt if task else 1,
    )
    return state, [*actions, AskTaskPlanner(request_id=rid, view=view)]


def ask_qa(state: ProjectState) -> Result:
    """Return the state awaiting QA's verdict on the task's Run result."""
    state, rid = _awaiting(state, "qa")
    task = state.task
    ask = AskQA(
        request_id=rid,
        task_id=task.task_id,
        implementation_plan=task.implementation_plan,
        result=task.result,
    )
    return state, [ask]


def ask_verify(state: ProjectState, actions: tuple[Action, ...] = ()) -> Result:
    """Return the state awaiting the milestone's commands run at the last commit."""
    state, rid = _awaiting(update(state, task=None), "verify")
    ask = VerifyMilestone(
        request_id=rid,
        milestone_index=state.milestone_index,
        commands=state.commands(),
    )
    return state, [*actions, ask]


def ask_assessor(
    state: ProjectState,
    trigger: AssessTrigger,
    context: str,
    actions: tuple[Action, ...],
) -> Result:
    """Return the state awaiting the Assessor (no task in hand), and its view."""
    state, rid = _awaiting(update(state, task=None), "assess")
    milestone = state.checked_milestone()
    view = assessor_view(state.window, state.remit, milestone, trigger, context)
    return state, [*actions, AskAssessor(request_id=rid, view=view)]


def prior_work(state: ProjectState) -> str:
    """Return the completed work a re-scope keeps, for the ScopeAgent to build on."""
    done = state.milestones[: state.milestone_index]
    lines = [f"Milestone {i} complete: {m.description}" for i, m in enumerate(done, 1)]
    if state.window.rollup.count:
        lines.append(state.window.rollup.text())
    lines += [
        f"{e.task_id} {e.description}: {e.result_summary}" for e in state.window.done
    ]
    return "\n".join(lines)
