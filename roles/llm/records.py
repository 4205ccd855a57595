"""What an LLM call leaves behind: its record and usage, or the error it ends in.

``roles.llm.client`` is the facade that callers import these names from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class LLMError(RuntimeError):
    """Raised when the endpoint fails for good; names the endpoint and status."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str = "",
        status: int | None = None,
        attempts: int = 0,
    ):
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.attempts = attempts


class LLMCancelled(RuntimeError):
    """Raised when the run was cancelled while a call was pending."""


@dataclass(frozen=True)
class CallRecord:
    """One model call as the pipeline records it (a TraceEvent)."""

    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    elapsed_ms: int
    messages: tuple[Mapping[str, Any], ...]
    response: str
    tool_calls: tuple[tuple[str, str], ...] = ()
    attempts: int = 1
    cost_usd: float | None = None
    # How the reply was constrained: "tools:native", "tools:schema",
    # "tools:json", "format:json_schema", "format:json_object" or "text".
    mode: str = "text"
    cached_tokens: int = 0
    # Until the first token came back: the call's time less the server's own
    # generation time (llama.cpp's ``timings.predicted_ms``); None when the
    # endpoint does not say.
    first_token_ms: int | None = None


@dataclass(frozen=True)
class Usage:
    """Calls made for one result, with their totals."""

    calls: tuple[CallRecord, ...] = ()

    @property
    def prompt_tokens(self) -> int:
        """Return the prompt tokens over every call."""
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        """Return the completion tokens over every call."""
        return sum(c.completion_tokens for c in self.calls)

    @property
    def elapsed_ms(self) -> int:
        """Return the wall time of every call, summed."""
        return sum(c.elapsed_ms for c in self.calls)

    @property
    def cost_usd(self) -> float | None:
        """Return the USD cost, or None unless every call's model has a price."""
        costs = [c.cost_usd for c in self.calls]
        if not costs or any(c is None for c in costs):
            return None
        return sum(costs)  # type: ignore[arg-type]

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls)
