"""The messages of a project, from the ScopeAgent's remit to the Assessor's verdict.

Sizes follow the spec: a text over its limit is cut (at a word where one is
near) and ends with "…", as the spec's Normaliser truncates fields; a missing
required text, an unknown action or verdict, or a verdict without the text it
needs is rejected with a ``pydantic.ValidationError`` naming the field. Limits
come from ``DEFAULT_CONFIG`` unless ``read`` is given another config::

    read(Scope, {"remit": "Add colony management", "milestones": [
        {"description": "User can create colonies", "areas": ["data models"]}]})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from roles.contract_base import Contract, NonEmpty
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.verification import Commands, Protected

ELLIPSIS = "…"
# A cut looks back this far for a space so a word is not split.
WORD_SLACK = 20

PlannerAction = Literal["implement", "skip", "abort", "milestone_done"]
AssessTrigger = Literal["periodic", "milestone_done", "abort", "max_attempts"]
Verdict = Literal["aligned", "minor_drift", "major_divergence", "milestone_complete"]
Trigger = Literal[
    "qa_failed", "abort", "max_attempts", "minor_drift", "major_divergence"
]
TIERS: dict[str, int] = {
    "qa_failed": 1,
    "abort": 2,
    "max_attempts": 2,
    "minor_drift": 3,
    "major_divergence": 3,
}


def clip(text: str, limit: int) -> str:
    """Return ``text`` stripped and, when longer than ``limit``, cut to fit with "…"."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit - len(ELLIPSIS)]
    space = head.rfind(" ", len(head) - WORD_SLACK)
    if space > 0:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def config_of(info: ValidationInfo) -> ProjectConfig:
    """Return the config passed to ``read``, or the spec's defaults."""
    return (info.context or {}).get("config", DEFAULT_CONFIG)


def _capped(limit: str, *, required: bool) -> AfterValidator:
    def check(value: str, info: ValidationInfo) -> str:
        if required and not value.strip():
            raise ValueError("must not be empty")
        return clip(value, getattr(config_of(info), limit))

    return AfterValidator(check)


RemitText = Annotated[str, _capped("remit_chars", required=True)]
MilestoneText = Annotated[str, _capped("milestone_chars", required=True)]
RoughItem = Annotated[str, _capped("rough_item_chars", required=True)]
TaskText = Annotated[str, _capped("task_description_chars", required=False)]
TaskTitle = Annotated[str, _capped("task_description_chars", required=True)]
SummaryText = Annotated[str, _capped("result_summary_chars", required=False)]
FeedbackText = Annotated[str, _capped("qa_feedback_chars", required=False)]
HintText = Annotated[str, _capped("correction_hint_chars", required=False)]
DivergenceText = Annotated[str, _capped("divergence_chars", required=False)]
EscalationText = Annotated[str, _capped("escalation_chars", required=False)]

ModelT = TypeVar("ModelT", bound=Contract)


def read(
    model: type[ModelT], data: Mapping[str, Any], config: ProjectConfig = DEFAULT_CONFIG
) -> ModelT:
    """Return ``data`` validated as ``model`` under ``config``'s size limits."""
    return model.model_validate(data, context={"config": config})


def trim_items(items: list[str], config: ProjectConfig) -> list[str]:
    """Return carry-forward items clipped to rough size, blanks dropped, capped."""
    rough = [clip(item, config.rough_item_chars) for item in items if item.strip()]
    return rough[: config.carry_forward_items]


class Milestone(Contract):
    """A user-testable outcome with a rough sketch of its areas of work, the
    commands that show it done and the files no task may change
    (``roles.projects.verification``)."""

    description: MilestoneText
    areas: list[RoughItem] = Field(default_factory=list)
    verify: Commands = Field(default_factory=list)
    protected: Protected = Field(default_factory=list)


class Scope(Contract):
    """The ScopeAgent's remit and milestones (on a re-scope, the remaining ones)."""

    remit: RemitText
    milestones: list[Milestone] = Field(min_length=1)

    @field_validator("milestones", mode="before")
    @classmethod
    def _plain_milestones(cls, value: Any) -> Any:
        """Accept a milestone given as its bare description."""
        if isinstance(value, list):
            return [{"description": m} if isinstance(m, str) else m for m in value]
        return value


class TaskPlan(Contract):
    """The TaskPlanner's round: an action, the PRP to run now, the lookahead."""

    action: PlannerAction
    task_description: TaskText = ""
    implementation_plan: str = ""
    carry_forward: list[str] = Field(default_factory=list)
    escalation_context: EscalationText = ""

    @field_validator("carry_forward")
    @classmethod
    def _rough_items(cls, items: list[str], info: ValidationInfo) -> list[str]:
        """Keep the nearest items, each rough; the rest are re-thought later."""
        return trim_items(items, config_of(info))

    @model_validator(mode="after")
    def _action_has_its_text(self) -> TaskPlan:
        needs = {
            "implement": ("task_description", "implementation_plan"),
            "skip": ("task_description",),
            "abort": ("escalation_context",),
        }.get(self.action, ())
        missing = [name for name in needs if not getattr(self, name).strip()]
        if missing:
            raise ValueError(f"action {self.action!r} needs {', '.join(missing)}")
        return self


class ImplementationResult(Contract):
    """What a task's Run reported: the files it changed and how it ended."""

    files: list[str] = Field(default_factory=list)
    result_summary: SummaryText = ""
    success: bool = True


class DoneEntry(Contract):
    """One completed task on the done list: firm ground truth for later rounds."""

    task_id: NonEmpty
    description: TaskTitle
    result_summary: SummaryText = ""


class QAVerdict(Contract):
    """QA's judgement of a task; a failure says what went wrong for the retry."""

    passed: bool
    feedback: FeedbackText = ""
    issues: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _failure_has_feedback(self) -> QAVerdict:
        if not self.passed and not self.feedback:
            raise ValueError("a failing verdict needs feedback saying what went wrong")
        return self


class AssessorVerdict(Contract):
    """The Assessor's alignment verdict, with a hint or analysis when it needs one."""

    verdict: Verdict
    correction_hint: HintText = ""
    divergence_analysis: DivergenceText = ""

    @model_validator(mode="after")
    def _verdict_has_its_text(self) -> AssessorVerdict:
        if self.verdict == "minor_drift" and not self.correction_hint:
            raise ValueError("minor_drift needs a correction_hint for the TaskPlanner")
        if self.verdict == "major_divergence" and not self.divergence_analysis:
            raise ValueError(
                "major_divergence needs a divergence_analysis for the ScopeAgent"
            )
        return self


class EscalationEvent(Contract):
    """A problem handed up a tier: 1 QA → TaskPlanner, 2 → Assessor, 3 → above."""

    tier: Literal[1, 2, 3]
    trigger: Trigger
    milestone_index: int = Field(ge=0)
    task_id: str | None = None
    detail: EscalationText = ""

    @model_validator(mode="after")
    def _tier_matches_trigger(self) -> EscalationEvent:
        if TIERS[self.trigger] != self.tier:
            raise ValueError(
                f"trigger {self.trigger!r} is tier {TIERS[self.trigger]}, "
                f"not {self.tier}"
            )
        return self
