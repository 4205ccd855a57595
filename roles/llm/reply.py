"""One model turn as the client hands it back, and how a completion becomes one.

The tools offered (``ToolSpec``), the native calls the model wrote
(``ToolCall``) and the turn itself (``ChatReply``), whose usage holds the
call's record. ``roles.llm.client`` is the facade that callers import these names from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roles.llm.config import Endpoint, LLMSettings
from roles.llm.records import CallRecord, LLMError, Usage


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def as_openai(self) -> dict[str, Any]:
        """Return the ``tools`` entry of the chat-completions API."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True)
class ToolCall:
    """One native tool call as the model wrote it (arguments are raw text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatReply:
    """One model turn: text, native tool calls and its usage."""

    content: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage


def build_reply(
    completion: Any,
    sent: list[dict],
    elapsed_ms: int,
    attempts: int,
    mode: str = "text",
    *,
    role: str,
    endpoint: Endpoint,
    settings: LLMSettings,
) -> ChatReply:
    """Return the ChatReply of ``completion``, with the record of the call."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise LLMError(
            f"LLM reply from {endpoint.base_url} has no choices",
            endpoint=endpoint.base_url,
            status=200,
            attempts=attempts,
        )
    message = choices[0].message
    calls = tuple(
        ToolCall(c.id, c.function.name, c.function.arguments or "")
        for c in (message.tool_calls or ())
        if getattr(c, "function", None) is not None
    )
    content = message.content or ""
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    made = getattr(usage, "completion_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    model = getattr(completion, "model", None) or endpoint.model
    record = CallRecord(
        role=role,
        model=model,
        prompt_tokens=prompt,
        completion_tokens=made,
        elapsed_ms=elapsed_ms,
        messages=tuple(sent),
        response=content,
        tool_calls=tuple((c.name, c.arguments) for c in calls),
        attempts=attempts,
        cost_usd=settings.prices.cost(model, prompt, made),
        mode=mode,
        cached_tokens=cached if isinstance(cached, int) else 0,
        first_token_ms=first_token_ms(completion, elapsed_ms),
    )
    return ChatReply(content, calls, choices[0].finish_reason, Usage((record,)))


def first_token_ms(completion: Any, elapsed_ms: float) -> int | None:
    """Return the milliseconds until the first generated token of a call that
    was not streamed: its whole time less the generation time the server
    reports (llama.cpp's ``timings.predicted_ms``), else None."""
    timings = getattr(completion, "timings", None)
    generating = timings.get("predicted_ms") if isinstance(timings, dict) else None
    if not isinstance(generating, int | float) or generating < 0:
        return None
    return max(0, round(elapsed_ms - generating))
