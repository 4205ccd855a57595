"""What ``step`` reads (events: an agent's reply, a Run's end, a cancel) and
what it returns (actions for the shell to carry out, in order).

Every request the state machine makes carries a ``request_id``; the reply
carries it back, and ``step`` accepts only the reply it is waiting for, so a
redelivered or stale message changes nothing. A task's Run is requested with
its dispatch id (``t3-a1``: task 3, attempt 1), which the state records before
the action is returned: the shell persists the state first, then starts the Run
under that id, and a dispatch id is never handed out twice.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from roles.contract_base import Contract, NonEmpty
from roles.projects.contracts import (
    AssessorVerdict,
    DoneEntry,
    EscalationEvent,
    ImplementationResult,
    QAVerdict,
    Scope,
    TaskPlan,
)
from roles.projects.verification import CommandResult
from roles.projects.window import AssessorView, PlannerView


class Message(Contract):
    """Base of events and actions: immutable once made."""

    model_config = ConfigDict(frozen=True)


class ScopeReply(Message):
    """The ScopeAgent's remit and milestones."""

    kind: Literal["scope"] = "scope"
    request_id: NonEmpty
    scope: Scope


class PlanReply(Message):
    """The TaskPlanner's round."""

    kind: Literal["plan"] = "plan"
    request_id: NonEmpty
    plan: TaskPlan


class RunReply(Message):
    """A task's Run ended; ``request_id`` is its dispatch id."""

    kind: Literal["run"] = "run"
    request_id: NonEmpty
    result: ImplementationResult


class QAReply(Message):
    """QA's verdict (the pre-step's, or the LLM's when the files were good)."""

    kind: Literal["qa"] = "qa"
    request_id: NonEmpty
    verdict: QAVerdict


class AssessorReply(Message):
    """The Assessor's verdict."""

    kind: Literal["assessor"] = "assessor"
    request_id: NonEmpty
    verdict: AssessorVerdict


class VerifyReply(Message):
    """The milestone's commands, each as it ran at ``commit`` (the last one)."""

    kind: Literal["verify"] = "verify"
    request_id: NonEmpty
    commit: str = ""
    results: list[CommandResult] = Field(default_factory=list)


class Cancel(Message):
    """The owner stops the project (and its running task)."""

    kind: Literal["cancel"] = "cancel"


Reply = ScopeReply | PlanReply | RunReply | QAReply | AssessorReply | VerifyReply
Event = Annotated[Reply | Cancel, Field(discriminator="kind")]
EVENT: TypeAdapter[Reply | Cancel] = TypeAdapter(Event)


class AskScopeAgent(Message):
    """Run the ScopeAgent; on a re-scope with the work done and what diverged."""

    kind: Literal["ask_scope_agent"] = "ask_scope_agent"
    request_id: str
    user_request: str
    prior_work: str = ""
    divergence_analysis: str = ""


class AskTaskPlanner(Message):
    """Run the TaskPlanner on this round's window."""

    kind: Literal["ask_task_planner"] = "ask_task_planner"
    request_id: str
    view: PlannerView


class DispatchTask(Message):
    """Start the task's Run under ``request_id``, with the PRP as its input."""

    kind: Literal["dispatch_task"] = "dispatch_task"
    request_id: str
    task_id: str
    attempt: int
    description: str
    implementation_plan: str


class AskQA(Message):
    """Judge the Run's result: ``routing.prestep_verdict`` first, then the LLM."""

    kind: Literal["ask_qa"] = "ask_qa"
    request_id: str
    task_id: str
    implementation_plan: str
    result: ImplementationResult


class VerifyMilestone(Message):
    """Run the milestone's verification commands in the sandbox at the last
    commit; the milestone is done only when each exits 0."""

    kind: Literal["verify_milestone"] = "verify_milestone"
    request_id: str
    milestone_index: int
    commands: list[str]


class RecordVerification(Message):
    """A milestone's verification: its results, and whether "done" was accepted
    (``reason`` says why not: a command failed, or there was none)."""

    kind: Literal["record_verification"] = "record_verification"
    milestone_index: int
    commit: str = ""
    results: list[CommandResult] = Field(default_factory=list)
    passed: bool
    reason: str = ""


class AskAssessor(Message):
    """Run the Assessor; ``view.trigger`` says why it is asked now."""

    kind: Literal["ask_assessor"] = "ask_assessor"
    request_id: str
    view: AssessorView


class RecordDone(Message):
    """A task is complete: keep its done-list entry for the page and the record."""

    kind: Literal["record_done"] = "record_done"
    milestone_index: int
    entry: DoneEntry
    # The attempt whose work is committed; empty for a skip, which ran nothing.
    dispatch_id: str = ""


class RecordEscalation(Message):
    """A problem went up a tier: show it on the project's timeline."""

    kind: Literal["record_escalation"] = "record_escalation"
    event: EscalationEvent


class StopTask(Message):
    """Stop the Run started under ``request_id``."""

    kind: Literal["stop_task"] = "stop_task"
    request_id: str


class ResetTask(Message):
    """Discard an attempt's work: keep it aside, then reset to the last commit.

    ``request_id`` is the attempt's dispatch id; ``reason`` says why its work
    is not kept (QA's feedback, the Run giving up, the project stopping).
    """

    kind: Literal["reset_task"] = "reset_task"
    request_id: str
    task_id: str
    reason: str = ""


class FinishProject(Message):
    """The project ended; write its report."""

    kind: Literal["finish_project"] = "finish_project"
    status: Literal["complete", "failed", "cancelled"]
    reason: str = ""


Action = (
    AskScopeAgent
    | AskTaskPlanner
    | DispatchTask
    | AskQA
    | AskAssessor
    | VerifyMilestone
    | RecordVerification
    | RecordDone
    | RecordEscalation
    | StopTask
    | ResetTask
    | FinishProject
)

# The messages a project sends on the bus, each under its class name.
PROJECT_MESSAGES = (
    ScopeReply,
    PlanReply,
    RunReply,
    QAReply,
    AssessorReply,
    VerifyReply,
    Cancel,
    AskScopeAgent,
    AskTaskPlanner,
    DispatchTask,
    StopTask,
    AskQA,
    AskAssessor,
    VerifyMilestone,
    RecordVerification,
    RecordDone,
    RecordEscalation,
    ResetTask,
    FinishProject,
)
