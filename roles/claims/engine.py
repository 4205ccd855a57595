"""The claims engine: one ordered table of named rules over a Case.

A ``Case`` holds the three typed inputs, each read once: the ``Question``
(what the request asks, ``roles.claims.question``), the ``Evidence`` (the
attempt's tool records) and the claim. A rule is a function of the Case that
returns why the claim is not evidence, or ""; ``decide`` runs the table in
order and returns the first ``Finding``, which names its rule::

    decide(case)  # Finding(rule="read-not-computed", reason="the claimed …")

A new case is a row in a table and a test, never a new module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from roles.claims.evidence import ToolCall, parse_evidence
from roles.claims.facts import output_text
from roles.claims.question import Question, read_question
from roles.contracts import ExecutionResult, SubTask

__all__ = ["Case", "Finding", "Rule", "decide"]


@dataclass
class Case:
    """One attempt to judge: the question, the subtask, the evidence, the claim.

    ``asked`` is what the subtask's own words ask (a step of a plan may count
    what the request only mentions); ``question`` is the request's.
    """

    subtask: SubTask
    result: ExecutionResult
    question: Question
    request: str = ""
    workspace: Path | None = None
    asked: Question = field(init=False)

    def __post_init__(self) -> None:
        self.asked = read_question(f"{self.subtask.intent}\n{self.subtask.context}")

    @cached_property
    def calls(self) -> list[str]:
        """The evidence entries, inherited ones first."""
        return list(self.result.tool_calls)

    @cached_property
    def records(self) -> list[ToolCall]:
        """The evidence entries parsed once."""
        return [c for c in map(parse_evidence, self.calls) if c is not None]

    @cached_property
    def claim(self) -> str:
        return output_text(self.result.output)

    def asks(self, *answers: str) -> bool:
        """True when the request or the subtask asks for one of ``answers``."""
        return self.question.answer in answers or self.asked.answer in answers

    def counts(self, *kinds: str) -> bool:
        """True when a count of one of ``kinds`` is asked (request or subtask)."""
        return any(
            q.answer == "count" and q.count_of in kinds
            for q in (self.question, self.asked)
        )


@dataclass(frozen=True)
class Rule:
    """One named row: ``check(case)`` says why the claim fails, or ""."""

    name: str
    check: Callable[[Case], str]


@dataclass(frozen=True)
class Finding:
    """The rule that refused a claim and why."""

    rule: str
    reason: str


def decide(case: Case, rules: Sequence[Rule]) -> Finding | None:
    """Return the first rule of ``rules`` the case fails, or None."""
    for rule in rules:
        reason = rule.check(case)
        if reason:
            return Finding(rule.name, reason)
    return None
