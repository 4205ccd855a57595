"""R4b's reply: its verdict on the merged result and on each task criterion."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator

from roles.llm.schemas import Reply

__all__ = ["CriterionResult", "MetaReply"]

_BOOL = TypeAdapter(bool)


class CriterionResult(Reply):
    """The model's judgement of one task criterion.

    A ``met`` or ``verdict`` that is not a yes/no answer ("partially") reads as
    no judgement, which never passes.
    """

    criterion: str = ""
    met: bool | None = None
    verdict: Literal["pass", "fail"] | None = None
    failure_class: str | None = None
    evidence: str = ""

    @field_validator("met", mode="before")
    @classmethod
    def _yes_or_no(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        try:
            return _BOOL.validate_python(value)
        except ValidationError:
            return None

    @field_validator("verdict", mode="before")
    @classmethod
    def _pass_or_fail(cls, value: Any) -> Any:
        text = value.strip().lower() if isinstance(value, str) else value
        return text if text in ("pass", "fail") else None

    @property
    def passed(self) -> bool:
        """Return True only on an explicit pass."""
        return self.met is True or (self.met is None and self.verdict == "pass")


class MetaReply(Reply):
    """The model's verdict on the merged result."""

    verdict: Literal["accept", "replan"]
    summary: str = ""
    merged_output: Any = None
    criteria_results: list[CriterionResult] = Field(default_factory=list)
    gap_summary: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value
