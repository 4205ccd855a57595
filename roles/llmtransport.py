"""HTTP side of the LLM client: retries, backoff, cancellation, usage records.

The ``openai`` package's own retries are off (``max_retries=0``) so the attempt
count is ours: 429, 408, 409, 5xx, connection errors, timeouts and garbled
bodies are retried with exponential backoff and jitter, or after the server's
``Retry-After``. Other statuses fail at once. Cancellation is checked before
each attempt, while backing off and, by running the request in a worker
thread, while waiting for the reply.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import openai

from roles import llmcaps
from roles.llmconfig import Endpoint, LLMSettings

JSON_MODE = {"type": "json_object"}
PROPS_TIMEOUT_S = 3.0


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


def _never() -> bool:
    return False


def as_cancel_check(
    cancelled: Callable[[], bool] | threading.Event | None,
) -> Callable[[], bool]:
    """Return a predicate for ``cancelled`` (a callable, an Event or None)."""
    if cancelled is None:
        return _never
    if isinstance(cancelled, threading.Event):
        return cancelled.is_set
    if callable(cancelled):
        return cancelled
    raise TypeError(
        f"cancelled must be callable or a threading.Event, not {cancelled!r}"
    )


class _Retryable(Exception):
    def __init__(
        self, status: int | None, detail: str, retry_after: float | None = None
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


class _FormatRejected(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def discover_context(base_url: str) -> int | None:
    """Return the context window an endpoint reports (llama.cpp: /props), or None."""
    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    if not root.startswith(("http://", "https://")):
        return None
    try:
        # The scheme is checked above: only http(s) endpoints are asked.
        props = urllib.request.urlopen(  # noqa: S310
            f"{root}/props", timeout=PROPS_TIMEOUT_S
        )
        with props as reply:
            data = json.loads(reply.read(1_000_000))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    value = (settings if isinstance(settings, dict) else {}).get("n_ctx")
    value = value or data.get("n_ctx")
    return value if isinstance(value, int) and value > 0 else None


class Transport:
    """Send chat-completions requests to one endpoint with retries."""

    def __init__(
        self,
        endpoint: Endpoint,
        settings: LLMSettings,
        *,
        headers: Mapping[str, str],
        is_cancelled: Callable[[], bool],
        sleep: Callable[[float], None],
        rand: Callable[[], float],
    ):
        self.endpoint = endpoint
        self.settings = settings
        self._label = str(headers.get("X-Artoo-Role", "?"))
        self._is_cancelled = is_cancelled
        self._sleep = sleep
        self._rand = rand
        self.caps = llmcaps.capabilities(
            endpoint.base_url,
            endpoint.model,
            context_tokens=settings.context_tokens,
            discover=discover_context,
        )
        self._sdk = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            max_retries=0,
            timeout=openai.Timeout(
                settings.read_timeout_s, connect=settings.connect_timeout_s
            ),
            default_headers=dict(headers),
        )

    def create(
        self,
        messages: list[dict],
        options: Mapping[str, Any],
        *,
        wanted: str | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> tuple[Any, int, str | None]:
        """Return ``(completion, attempts, format used)``; raise LLMError or
        LLMCancelled. ``wanted`` is the strongest response_format to try
        (``json_schema`` needs ``schema``); rejected formats are remembered for
        the endpoint and the request is sent again with the next weaker one."""
        extra_attempts = 0
        while True:
            kind = self.caps.best_format(wanted) if wanted else None
            if kind == "json_schema" and schema is None:
                kind = self.caps.best_format("json_object")
            try:
                completion, attempts = self._with_retries(
                    messages, options, _response_format(kind, schema)
                )
                return completion, attempts + extra_attempts, kind
            except _FormatRejected as rejected:
                self.caps.reject_format(rejected.kind)
                extra_attempts += 1

    def close(self) -> None:
        """Close the HTTP client; a request in flight fails in its thread."""
        self._sdk.close()

    def _with_retries(
        self, messages: list[dict], options: Mapping[str, Any], fmt: dict | None
    ) -> tuple[Any, int]:
        budget = self.settings.max_retries + 1
        last: _Retryable | None = None
        for attempt in range(1, budget + 1):
            self._raise_if_cancelled()
            try:
                return self._guarded(
                    lambda: self._request(messages, options, fmt)
                ), attempt
            except LLMError as err:
                err.attempts = attempt
                raise
            except _Retryable as err:
                last = err
                if attempt < budget:
                    self._wait(self._delay(attempt, err.retry_after))
        assert last is not None
        status = f"last HTTP status {last.status}" if last.status else "no HTTP status"
        raise LLMError(
            f"LLM call for role {self._label} to {self.endpoint.base_url} failed "
            f"after {budget} attempt(s); {status}: {last.detail}",
            endpoint=self.endpoint.base_url,
            status=last.status,
            attempts=budget,
        )

    def _request(
        self, messages: list[dict], options: Mapping[str, Any], fmt: dict | None
    ) -> Any:
        extra = {"response_format": fmt} if fmt else {}
        try:
            return self._sdk.chat.completions.create(
                model=self.endpoint.model, messages=messages, **options, **extra
            )
        except openai.APIStatusError as err:
            raise self._classify(err, fmt) from None
        except openai.APITimeoutError:
            raise _Retryable(
                None, f"no reply within {self.settings.read_timeout_s:g} s (timeout)"
            ) from None
        except openai.APIConnectionError as err:
            raise _Retryable(
                None, f"connection error: {err.__cause__ or err}"
            ) from None
        except (json.JSONDecodeError, openai.APIResponseValidationError) as err:
            raise _Retryable(200, f"malformed response body: {err}") from None

    def _classify(self, err: openai.APIStatusError, fmt: dict | None) -> Exception:
        status, detail = err.status_code, _detail(err)
        lowered = detail.lower()
        if (
            status in (400, 422)
            and fmt
            and any(w in lowered for w in ("response_format", "json_schema", "schema"))
        ):
            return _FormatRejected(fmt["type"])
        if status in (408, 409, 429) or status >= 500:
            return _Retryable(status, detail, _retry_after(err.response.headers))
        return LLMError(
            f"LLM call for role {self._label} to {self.endpoint.base_url} failed: "
            f"HTTP {status}: {detail}",
            endpoint=self.endpoint.base_url,
            status=status,
            attempts=1,
        )

    def _guarded(self, request: Callable[[], Any]) -> Any:
        """Run ``request``; when cancellable, in a thread watched for cancellation."""
        if self._is_cancelled is _never:
            return request()
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = request()
            except BaseException as err:  # handed to the waiting thread
                box["error"] = err
            finally:
                done.set()

        threading.Thread(target=work, name="llm-request", daemon=True).start()
        while not done.wait(self.settings.cancel_poll_s):
            if self._is_cancelled():
                # Closing the connections ends the abandoned request promptly.
                self.close()
                self._raise_if_cancelled()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.settings.retry_after_max_s)
        backoff = self.settings.backoff_base_s * 2 ** (attempt - 1)
        # Equal jitter: never less than half the backoff, so retries stay spaced.
        return min(backoff, self.settings.backoff_max_s) * (0.5 + 0.5 * self._rand())

    def _wait(self, seconds: float) -> None:
        if self._is_cancelled is _never:
            self._sleep(seconds)
            return
        remaining = seconds
        while remaining > 0:
            self._raise_if_cancelled()
            step = min(remaining, self.settings.cancel_poll_s)
            self._sleep(step)
            remaining -= step

    def _raise_if_cancelled(self) -> None:
        if self._is_cancelled():
            raise LLMCancelled(f"LLM call for role {self._label} cancelled")


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


def _response_format(kind: str | None, schema: Mapping[str, Any] | None) -> dict | None:
    if kind == "json_schema" and schema is not None:
        return {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(schema)},
        }
    if kind == "json_object":
        return dict(JSON_MODE)
    return None
