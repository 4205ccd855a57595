"""One tool call as recorded, and what the model sees of its output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODEL_OUTPUT_LIMIT = 4000


@dataclass(frozen=True)
class ToolRecord:
    """One call as made: its arguments and full (capped) output."""

    name: str
    args: Mapping[str, Any]
    output: str
    error: bool = False


def head_tail(text: str, limit: int = MODEL_OUTPUT_LIMIT) -> str:
    """Return ``text`` cut to ``limit`` chars: the first third and the end."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return (
        text[:head]
        + "\n...[middle truncated]...\n"
        + text[len(text) - (limit - head) :]
    )
