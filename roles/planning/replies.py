"""R2's replies as the model writes them: the plan, and the graceful failure.

A bare array is read as the plan's subtask list, and a subtask written as a
string as its intent; criteria that state nothing are dropped, each with a line
in ``notes``. The next-moves reply needs at least two moves. ``roles.planner``
owns what the model may not decide (ids, parents, sequence numbers).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from roles.contracts import CriterionSpec
from roles.llm.schemas import Reply, keep_criteria

# How long a plan's lists may grow as the model decodes it (the schema's
# ``maxItems``, not a validation: a reply from an endpoint without schemas is
# read whole). A 1.5B planner decoding "which status code appears most often"
# wrote the same criterion until 2,048 tokens cut it off, twice: 180 s spent
# and the run abandoned without a plan. The prompt asks for the minimum number
# of subtasks and concrete criteria; these bounds are well above what a plan
# that follows it holds.
MAX_SUBTASKS = 6
MAX_CRITERIA = 4


class PlannedSubTask(Reply):
    """One subtask as the model writes it; ids and parents are ignored."""

    intent: str = Field(min_length=1)
    success_criteria: list[CriterionSpec] = Field(
        default_factory=list, json_schema_extra={"maxItems": MAX_CRITERIA}
    )
    context: str = ""
    sequence: int | None = None


class PlanReply(Reply):
    """The model's plan; a bare array is read as the subtask list.

    ``subtasks`` is required, so a lone subtask object (what the JSON extractor
    finds first in a bare array after prose) earns a repair request instead of
    silently losing the other subtasks. A subtask written as a string is its
    intent. Criteria that state nothing are dropped, each with a line in
    ``notes`` (filled by the parser, never by the model).
    """

    task_criteria: list[CriterionSpec] = Field(
        default_factory=list, json_schema_extra={"maxItems": MAX_CRITERIA}
    )
    subtasks: list[PlannedSubTask] = Field(json_schema_extra={"maxItems": MAX_SUBTASKS})
    notes: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _small_model_plan(cls, value: Any) -> Any:
        return reshape_plan(value)


def reshape_plan(value: Any) -> Any:
    """Return a plan reply with its criteria kept or dropped, and ``notes`` why."""
    if isinstance(value, list):
        value = {"subtasks": value}
    if not isinstance(value, dict):
        return value
    criteria, notes = keep_criteria(value.get("task_criteria"), "task_criteria")
    reshaped = {**value, "task_criteria": criteria}
    subtasks = value.get("subtasks")
    if isinstance(subtasks, str | dict):
        subtasks = [subtasks]
    if isinstance(subtasks, list):
        reshaped["subtasks"] = []
        for number, sub in enumerate(subtasks, start=1):
            if isinstance(sub, str):
                sub = {"intent": sub}
            if isinstance(sub, dict):
                where = f"subtask {number}"
                kept, dropped = keep_criteria(sub.get("success_criteria"), where)
                sub, notes = {**sub, "success_criteria": kept}, notes + dropped
            reshaped["subtasks"].append(sub)
    return {**reshaped, "notes": notes}


class NextMovesReply(Reply):
    """The model's graceful failure (extra moves beyond 3 are dropped)."""

    accomplished: str = ""
    next_moves: list[str] = Field(min_length=2)
