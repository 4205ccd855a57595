"""The messages of one task's run, from R1's TaskSpec to GGS's FinalResult.

Beside the pipeline's own messages are the questions it puts to people: R1's
clarification and R3's Law 1 approval, with their answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from roles.claims.question import Question
from roles.contract_base import (
    ActionDirective,
    Contract,
    Control,
    FailureClass,
    MacroState,
    Mode,
    NonEmpty,
    TerminalDirective,
)
from roles.criteria import CriterionSpec


class Constraints(Contract):
    """Scope and deadline of a task, both optional and kept verbatim."""

    scope: str | None = None
    deadline: str | None = None


class TaskSpec(Contract):
    """R1's faithful restatement of the user's request."""

    task_id: NonEmpty
    intent: NonEmpty
    constraints: Constraints = Field(default_factory=Constraints)
    raw_input: str
    # What the request asks for, as R1 stated it (None: read from its words).
    asks: Question | None = None


class SubTask(Contract):
    """One unit of work for an executor; ids are assigned by the runtime."""

    subtask_id: NonEmpty
    parent_task_id: NonEmpty
    intent: NonEmpty
    success_criteria: list[CriterionSpec] = Field(default_factory=list)
    context: str = ""
    deadline: str | None = None
    sequence: int = Field(default=1, ge=1)


class DispatchManifest(Contract):
    """What R2 dispatched this round; no subtasks plus a reason means no plan."""

    task_id: NonEmpty
    subtask_ids: list[str] = Field(default_factory=list)
    task_spec: TaskSpec | None = None
    dispatched_at: datetime | None = None
    task_criteria: list[CriterionSpec] = Field(default_factory=list)
    reason: str = ""


class ExecutionResult(Contract):
    """R3's result of one attempt, with its tool-call evidence entries."""

    subtask_id: NonEmpty
    status: Literal["completed", "uncertain", "failed"]
    output: Any = None
    uncertainty: str | None = None
    tool_calls: list[str] = Field(default_factory=list)


class CorrectionSignal(Contract):
    """R4a's instruction to R3 for the next attempt."""

    subtask_id: NonEmpty
    attempt_number: int = Field(ge=1)
    failed_criterion: str = ""
    failure_class: FailureClass | None = None
    what_was_wrong: str = ""
    what_to_do: str = ""


class CriterionVerdict(Contract):
    """The verdict on one criterion, with its failure class and evidence."""

    criterion: NonEmpty
    mode: Mode = "verifiable"
    verdict: Literal["pass", "fail"]
    failure_class: FailureClass | None = None
    evidence: str = ""
    # The rule that decided it (a row of the claims engine, a check's type,
    # "model" for the model's judgement); "" when none is recorded.
    rule: str = ""


class GapPoint(Contract):
    """One attempt of the fast loop: its score and the criteria it left unmet."""

    attempt: int = Field(ge=1)
    score: float = 0.0
    unmet_criteria: list[str] = Field(default_factory=list)
    failure_class: Literal["", "logical", "environmental", "mixed"] = ""


# How every failure_reason of the machinery (the model endpoint, a cancel, the
# fan-in deadline) begins: what the subtask's approach was never got to run.
INFRASTRUCTURE = "infrastructure"


class SubTaskOutcome(Contract):
    """R4a's final word on a subtask."""

    subtask_id: NonEmpty
    parent_task_id: NonEmpty
    intent: str = ""
    success_criteria: list[CriterionSpec] = Field(default_factory=list)
    status: Literal["matched", "failed"]
    output: Any = None
    failure_reason: str | None = None
    gap_trajectory: list[GapPoint] = Field(default_factory=list)
    criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)
    # The calls of the subtask's earlier attempts: what they changed stays changed.
    earlier_calls: list[str] = Field(default_factory=list)

    @property
    def infrastructure(self) -> bool:
        """True when it failed because the machinery did, not its approach."""
        return self.status == "failed" and (self.failure_reason or "").startswith(
            INFRASTRUCTURE
        )


class ReplanRequest(Contract):
    """R4b's failure signal to GGS, with the full outcomes of the round."""

    task_id: NonEmpty
    intent: str = ""
    gap_summary: str = ""
    failed_subtasks: list[str] = Field(default_factory=list)
    correction_count: int = Field(default=0, ge=0)
    elapsed_ms: int = Field(default=0, ge=0)
    outcomes: list[SubTaskOutcome] = Field(default_factory=list)
    recommendation: Literal["replan", "abandon"] = "replan"
    task_criteria_verdicts: list[CriterionVerdict] = Field(default_factory=list)


class OutcomeSummary(Contract):
    """R4b's acceptance: every subtask matched and the merged result verified."""

    task_id: NonEmpty
    intent: str = ""
    summary: str = ""
    merged_output: Any = None
    elapsed_ms: int = Field(default=0, ge=0)
    outcomes: list[SubTaskOutcome] = Field(default_factory=list)


class Loss(Contract):
    """The loss breakdown of one GGS round (keys ``D``, ``P``, ``Omega``, ``L``)."""

    D: float = Field(ge=0.0, le=1.0)
    P: float = Field(ge=0.0, le=1.0)
    Omega: float = Field(ge=0.0, le=1.0)
    L: float = Field(ge=0.0)


class PlanDirective(Contract):
    """GGS's instruction to R2 for the next planning round."""

    task_id: NonEmpty
    loss: Loss
    prev_directive: MacroState
    directive: ActionDirective
    blocked_tools: list[str] = Field(default_factory=list)
    blocked_targets: list[str] = Field(default_factory=list)
    failed_criterion: str = ""
    failure_class: Literal["logical", "environmental", "mixed"]
    budget_pressure: float = Field(ge=0.0, le=1.0)
    grad_l: float
    rationale: str = ""
    # The run's control strategy: a transcript shows who decided.
    control: Control = "ggs"


class FinalResult(Contract):
    """The end of a run, emitted by GGS on every path."""

    task_id: NonEmpty
    summary: str
    output: Any = None
    loss: Loss
    grad_l: float = 0.0
    replans: int = Field(default=0, ge=0)
    prev_directive: MacroState
    directive: TerminalDirective
    rationale: str = ""
    # Why a run that did not finish stopped, in the user's words.
    reason: str = ""
    control: Control = "ggs"


class ApprovalRequest(Contract):
    """A Law 1 gated tool call waiting for the operator's decision."""

    approval_id: NonEmpty
    subtask_id: NonEmpty
    tool: NonEmpty
    command: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    reason: NonEmpty
    changes: list[dict[str, Any]] = Field(default_factory=list)


class ApprovalDecision(Contract):
    """The operator's answer to an ApprovalRequest."""

    approval_id: NonEmpty
    decision: Literal["approve", "deny"]


class ClarificationRequest(Contract):
    """R1's question when no reasonable interpretation of the input exists."""

    question: NonEmpty
    round: int = Field(default=1, ge=1)
    raw_input: str = ""


class ClarificationAnswer(Contract):
    """The user's answer; an empty answer means proceed as is."""

    answer: str = ""
    round: int = Field(default=1, ge=1)


class DirectResponse(Contract):
    """R1's answer to a conversational input, which ends the run.

    Greetings, identity and short questions are answered in one call without
    the pipeline (the original's ``DirectResponse``). It is no FinalResult: GGS,
    the sole emitter of those, never saw the run.
    """

    answer: str
    raw_input: str = ""


class NextMoves(Contract):
    """R2's graceful failure after an abandon: what was done, what to try next."""

    task_id: NonEmpty
    accomplished: str = ""
    next_moves: list[NonEmpty] = Field(min_length=2, max_length=3)
