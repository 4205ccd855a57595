"""HTTP side of the LLM client: retries, backoff, cancellation, usage records.

The ``openai`` package's own retries are off (``max_retries=0``) so the attempt
count is ours: 429, 408, 409, 5xx, connection errors, timeouts and garbled
bodies are retried with exponential backoff and jitter, or after the server's
``Retry-After``. Other statuses fail at once. Cancellation is checked before
each attempt, while backing off and, by running the request in a worker
thread, while waiting for the reply.

The errors and records are in ``roles.llm.records``, the retry decisions in
``roles.llm.retry``; ``roles.llm.client`` is the facade callers import from.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import openai

from roles.llm import caps as llmcaps
from roles.llm.config import Endpoint, LLMSettings
from roles.llm.records import CallRecord, LLMCancelled, LLMError, Usage
from roles.llm.retry import FormatRejected, Retryable, classify

__all__ = [
    "CallRecord",
    "LLMCancelled",
    "LLMError",
    "Transport",
    "Usage",
    "as_cancel_check",
    "discover_context",
]

JSON_MODE = {"type": "json_object"}
PROPS_TIMEOUT_S = 3.0


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
            except FormatRejected as rejected:
                self.caps.reject_format(rejected.kind)
                extra_attempts += 1

    def close(self) -> None:
        """Close the HTTP client; a request in flight fails in its thread."""
        self._sdk.close()

    def _with_retries(
        self, messages: list[dict], options: Mapping[str, Any], fmt: dict | None
    ) -> tuple[Any, int]:
        budget = self.settings.max_retries + 1
        last: Retryable | None = None
        for attempt in range(1, budget + 1):
            self._raise_if_cancelled()
            try:
                return self._guarded(
                    lambda: self._request(messages, options, fmt)
                ), attempt
            except LLMError as err:
                err.attempts = attempt
                raise
            except Retryable as err:
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
            raise classify(
                err, fmt, label=self._label, base_url=self.endpoint.base_url
            ) from None
        except openai.APITimeoutError:
            raise Retryable(
                None, f"no reply within {self.settings.read_timeout_s:g} s (timeout)"
            ) from None
        except openai.APIConnectionError as err:
            raise Retryable(None, f"connection error: {err.__cause__ or err}") from None
        except (json.JSONDecodeError, openai.APIResponseValidationError) as err:
            raise Retryable(200, f"malformed response body: {err}") from None

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


def _response_format(kind: str | None, schema: Mapping[str, Any] | None) -> dict | None:
    if kind == "json_schema" and schema is not None:
        return {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(schema)},
        }
    if kind == "json_object":
        return dict(JSON_MODE)
    return None
