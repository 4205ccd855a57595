"""How a failed chat-completions request is classified: retried, resent or final.

429, 408, 409 and 5xx are retried, after the server's ``Retry-After`` when it
gives one; a 400 or 422 about the response_format makes the request go again
with a weaker format; any other status fails at once with an LLMError.
"""

from __future__ import annotations

from collections.abc import Mapping

import openai

from roles.llm.records import LLMError


class Retryable(Exception):
    """A failure worth another attempt: its status, detail and Retry-After."""

    def __init__(
        self, status: int | None, detail: str, retry_after: float | None = None
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


class FormatRejected(Exception):
    """The endpoint refused a response_format; ``kind`` names which."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def classify(
    err: openai.APIStatusError, fmt: dict | None, *, label: str, base_url: str
) -> Exception:
    """Return what a failed status means: Retryable, FormatRejected or LLMError."""
    status, detail = err.status_code, _detail(err)
    lowered = detail.lower()
    if (
        status in (400, 422)
        and fmt
        and any(w in lowered for w in ("response_format", "json_schema", "schema"))
    ):
        return FormatRejected(fmt["type"])
    if status in (408, 409, 429) or status >= 500:
        return Retryable(status, detail, _retry_after(err.response.headers))
    return LLMError(
        f"LLM call for role {label} to {base_url} failed: HTTP {status}: {detail}",
        endpoint=base_url,
        status=status,
        attempts=1,
    )


def _detail(err: openai.APIStatusError) -> str:
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:500]
    return str(err.message)[:500]


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Return the server's requested delay in seconds, or None if absent or a date."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
