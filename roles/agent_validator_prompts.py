"""R4a's texts: the judging prompt, its messages and the reply it asks for.

The model answers ``{"verdict": "matched|retry|failed", "criteria_results":
[{"criterion", "met", "failure_class", "evidence"}], "what_was_wrong",
"what_to_do", "failure_reason"}``, one result per criterion it was asked about.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any, Literal

from pydantic import field_validator

from roles.contracts import Contract, CriterionVerdict, ExecutionResult, SubTask
from roles.tools import head_tail


class CriterionResult(Contract):
    """The model's verdict on one criterion."""

    criterion: str = ""
    met: bool = False
    failure_class: Literal["logical", "environmental"] | None = None
    evidence: str = ""

    @field_validator("failure_class", mode="before")
    @classmethod
    def _known_class(cls, value: Any) -> Any:
        text = str(value or "").strip().lower()
        return text if text in ("logical", "environmental") else None

    @field_validator("evidence", "criterion", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class ValidatorReply(Contract):
    """What R4a asks the model to return (DESIGN §8.2)."""

    verdict: Literal["matched", "retry", "failed"] = "retry"
    criteria_results: list[CriterionResult] = []
    what_was_wrong: str = ""
    what_to_do: str = ""
    failure_reason: str = ""

    @field_validator("what_was_wrong", "what_to_do", "failure_reason", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    @field_validator("verdict", mode="before")
    @classmethod
    def _known_verdict(cls, value: Any) -> str:
        text = str(value or "").strip().lower()
        return text if text in ("matched", "retry", "failed") else "retry"


SYSTEM_PROMPT = """You are R4a, the Agent-Validator of artoo. You judge one \
attempt of one subtask against its success criteria, each criterion on its own.

Rules:
- tool_calls are the ground truth (each entry: tool: {args} → its output, \
shortened in the middle when long); output is the executor's claim. A criterion is \
met only when the evidence positively shows it; vague claims, missing evidence or \
an interrupted, failed or truncated primary action mean not met. When in doubt: not met.
- A later ls/find/stat does not prove that a failed primary action succeeded.
- Never judge the overall result: one verdict per listed criterion, nothing else.
- failure_class for an unmet criterion: "environmental" when the cause is outside \
the executor's approach (missing file or path, permission denied, network error, \
timeout, command not found, a [LAW1] denial); otherwise "logical".
- verdict: "matched" if every criterion is met; "retry" if a different approach \
could meet the unmet ones; "failed" if it cannot be done (say why in \
failure_reason).
- what_was_wrong: one sentence on the first unmet criterion. what_to_do: one \
concrete change that would meet it.

Reply with only this JSON object:
{"verdict": "matched|retry|failed", "criteria_results": [{"criterion": "<the \
criterion text>", "met": true|false, "failure_class": "logical|environmental|null", \
"evidence": "<quote from the tool calls or output>"}], "what_was_wrong": "", \
"what_to_do": "", "failure_reason": ""}"""


def build_messages(
    subtask: SubTask,
    result: ExecutionResult,
    asked: list[str],
    checked: list[tuple[str, CriterionVerdict]],
    today: date | None,
) -> list[dict[str, str]]:
    """Return the validator's chat messages for the criteria left to judge."""
    parts = [f"Today's date: {today.isoformat()}"] if today else []
    parts.append(f"SubTask intent: {subtask.intent}")
    if subtask.context:
        parts.append(f"SubTask context: {subtask.context}")
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(asked, start=1))
    parts.append(f"Criteria to judge (exactly these, in this order):\n{numbered}")
    if checked:
        lines = "\n".join(f"- {c}: {v.verdict} ({v.evidence})" for c, v in checked)
        parts.append(f"Already checked in code (do not judge again):\n{lines}")
    parts.append(f"ExecutionResult:\n{_describe(result)}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _describe(result: ExecutionResult) -> str:
    data = result.model_dump()
    if isinstance(data.get("output"), str):
        data["output"] = head_tail(data["output"], 8000)
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)
