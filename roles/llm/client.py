"""One client for every OpenAI-compatible chat-completions endpoint.

OpenAI, DeepSeek, Ollama (``…/v1``), vLLM and the llama.cpp server are all
reached through the ``openai`` package. The client adds what the pipeline
needs on top: ``X-Artoo-Role``/``X-Artoo-Run`` headers, bounded retries with
backoff (its own, so the count is known), prompt cancellation, tolerant JSON
recovery with one repair request, and per-call usage records::

    with client_for("R2", os.environ, run_id=run_id, cancelled=run.is_cancelled) as llm:
        plan, usage = llm.complete_json(messages, PlanReply)

Configuration lives in ``roles.llm.config``; tool loops in ``roles.toolloop``;
the turn a call returns, and how it is built, in ``roles.llm.reply``.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from roles import budget
from roles.llm.caps import Capabilities
from roles.llm.config import (
    Endpoint,
    LLMConfigError,
    LLMSettings,
    is_configured,
    load_endpoint,
    load_settings,
    tier_of,
)
from roles.llm.jsonparse import JSONExtractError, describe_error, parse_as, strip_think
from roles.llm.reply import ChatReply, ToolCall, ToolSpec, build_reply
from roles.llm.schemas import reply_schema
from roles.llm.transport import (
    CallRecord,
    LLMCancelled,
    LLMError,
    Transport,
    Usage,
    as_cancel_check,
)

# The facade: callers import every LLM name from here, never from the modules
# behind it. roles.llm.records (LLMError, LLMCancelled, Usage, CallRecord) and
# roles.llm.config (LLMConfigError) define what the transport raises and builds,
# because importing them from here would be a cycle; roles.llm.reply holds
# the turn (ChatReply, ToolCall, ToolSpec) and how a completion becomes one.
__all__ = [
    "CallRecord",
    "ChatReply",
    "LLMCancelled",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMOutputError",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "client_for",
    "is_configured",
]

ModelT = TypeVar("ModelT", bound=BaseModel)
Message = Mapping[str, Any]

REPAIR_PROMPT = (
    "Your previous reply could not be used: {problem}\n"
    "Reply again with only the corrected JSON object, no prose and no code fence."
)
# A reply the token limit cut off is most often a loop (one string or item
# repeated); quoting it back would prime the same loop and cost its length again.
CUT_OFF_PROMPT = (
    "Your previous reply ran past the length limit and was cut off before its JSON "
    "ended: it was too long or repeated itself. Reply again with only the JSON "
    "object, each text field one short sentence, nothing repeated."
)


class LLMOutputError(LLMError):
    """Raised when a reply stays unusable after the repair request.

    ``raw`` keeps the last reply for the debug log; it is deliberately left out
    of the message so hallucinated text never travels as evidence (go-artoo #83).
    """

    def __init__(self, message: str, *, raw: str, usage: Usage, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.raw = raw
        self.usage = usage


class LLMClient:
    """Call one endpoint on behalf of one role of one run."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        role: str,
        run_id: str = "",
        settings: LLMSettings | None = None,
        cancelled: Callable[[], bool] | threading.Event | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.endpoint = endpoint
        self.role = role
        self.run_id = run_id
        self.settings = settings or LLMSettings()
        self._is_cancelled = as_cancel_check(cancelled)
        self._clock = clock
        self._transport = Transport(
            endpoint,
            self.settings,
            headers={"X-Artoo-Role": role, "X-Artoo-Run": run_id},
            is_cancelled=self._is_cancelled,
            sleep=sleep,
            rand=rand,
        )

    @property
    def tool_protocol(self) -> str:
        """Return the tool protocol: ``ARTOO_TOOL_PROTOCOL``, or when that is
        ``auto`` the one discovered for this endpoint (``native`` at first)."""
        if self.settings.tool_protocol != "auto":
            return self.settings.tool_protocol
        return self.caps.tools

    @property
    def caps(self) -> Capabilities:
        """Return what this endpoint is known to honour (shared per process)."""
        return self._transport.caps

    @property
    def discovers_tools(self) -> bool:
        """Return True when the tool protocol may switch by itself (``auto``)."""
        return self.settings.tool_protocol == "auto"

    def check_cancelled(self) -> None:
        """Raise LLMCancelled when the run has been cancelled."""
        if self._is_cancelled():
            raise LLMCancelled(f"LLM call for role {self.role} cancelled")

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] = (),
        json_mode: bool = False,
        schema: Mapping[str, Any] | None = None,
        mode: str = "",
        temperature: float | None = None,
    ) -> ChatReply:
        """Send one chat-completions request (with retries) and return the turn.

        ``temperature`` overrides the settings' for this request.

        ``schema`` asks for schema-constrained JSON (``json_schema``), degrading
        to ``json_object`` and then to prompt-only where the endpoint refuses;
        ``json_mode`` asks for ``json_object`` at most. The prompt is fitted to
        the endpoint's context window first.
        """
        window = self.caps.context_tokens
        sent = budget.fit(messages, window)
        started = self._clock()
        options: dict[str, Any] = {}
        if tools:
            options["tools"] = [t.as_openai() for t in tools]
        if window:
            options["max_tokens"] = budget.reply_limit(window, self.role)
        if temperature is None:
            temperature = self.settings.temperature
        if temperature is not None:
            options["temperature"] = temperature
        if self.settings.seed is not None:
            options["seed"] = self.settings.seed
        wanted = None
        if self.settings.json_mode and (schema is not None or json_mode):
            wanted = "json_schema" if schema is not None else "json_object"
        completion, attempts, used = self._transport.create(
            sent, options, wanted=wanted, schema=schema
        )
        elapsed_ms = int(round((self._clock() - started) * 1000))
        mode = mode or ("tools:native" if tools else f"format:{used or 'none'}")
        return build_reply(
            completion,
            sent,
            elapsed_ms,
            attempts,
            mode,
            role=self.role,
            endpoint=self.endpoint,
            settings=self.settings,
        )

    def complete_text(self, messages: Sequence[Message]) -> tuple[str, Usage]:
        """Return the reply's text without reasoning blocks, and its usage."""
        reply = self.chat(messages)
        return strip_think(reply.content), reply.usage

    def complete_json(
        self, messages: Sequence[Message], model_cls: type[ModelT]
    ) -> tuple[ModelT, Usage]:
        """Return the reply parsed and validated as ``model_cls``, and usage.

        One repair request quoting the error follows an unusable reply (one the
        token limit cut off is asked again, shorter, without its text); a second
        failure raises LLMOutputError.
        """
        schema = reply_schema(model_cls)
        reply = self.chat(messages, schema=schema)
        try:
            return parse_as(reply.content, model_cls), reply.usage
        except (JSONExtractError, ValidationError) as err:
            problem = describe_error(err)
        if reply.finish_reason == "length":
            repair = [*messages, {"role": "user", "content": CUT_OFF_PROMPT}]
        else:
            repair = [
                *messages,
                {
                    "role": "assistant",
                    "content": strip_think(reply.content) or reply.content,
                },
                {"role": "user", "content": REPAIR_PROMPT.format(problem=problem)},
            ]
        second = self.chat(repair, schema=schema)
        usage = reply.usage + second.usage
        try:
            return parse_as(second.content, model_cls), usage
        except (JSONExtractError, ValidationError) as err:
            raise LLMOutputError(
                f"{self.role} reply from {self.endpoint.base_url} is not a valid "
                f"{model_cls.__name__} after one repair request: {describe_error(err)}",
                raw=second.content,
                usage=usage,
                endpoint=self.endpoint.base_url,
                status=200,
                attempts=2,
            ) from None

    def close(self) -> None:
        """Release the HTTP connections."""
        self._transport.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def client_for(
    role: str,
    env: Mapping[str, str] | None = None,
    *,
    run_id: str = "",
    cancelled: Callable[[], bool] | threading.Event | None = None,
    **kwargs: Any,
) -> LLMClient:
    """Return a client for ``role`` on its tier's endpoint.

    ``env`` defaults to ``os.environ`` read now, never at import. Extra keyword
    arguments (``sleep``, ``rand``, ``clock``, ``settings``) go to LLMClient.
    """
    env = os.environ if env is None else env
    endpoint = load_endpoint(tier_of(role), env)
    settings = kwargs.pop("settings", None) or load_settings(env)
    return LLMClient(
        endpoint,
        role=role,
        run_id=run_id,
        settings=settings,
        cancelled=cancelled,
        **kwargs,
    )
