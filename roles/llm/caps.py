"""What each endpoint honours, discovered once per process and remembered.

Every client of one (base URL, model) shares one ``Capabilities``:

- ``formats``: the ``response_format`` kinds still believed to work, strongest
  first (``json_schema`` → ``json_object``); a 400 naming the parameter drops
  one, and replies fall back to prompt-only JSON with lenient parsing;
- ``tools``: how tool calls travel, ``native`` (``tools``/``tool_calls``) until
  the endpoint answers a tool request with a call written as text, then
  ``schema`` (a ``json_schema`` whose ``anyOf`` has one branch per tool), or
  ``json`` (prompt-only) where no schema is honoured; an endpoint never seen to
  call a tool natively that answers a tool request without any call switches
  too (a small model that ignores ``tools`` may answer instead of calling);
- ``context_tokens``: the context window, from ``ARTOO_CONTEXT_TOKENS`` or the
  endpoint's ``/props`` (llama.cpp's server reports ``n_ctx``); 0 when unknown.

Each change is logged in ``events`` so the trace can show what was chosen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

FORMATS = ("json_schema", "json_object")


@dataclass
class Capabilities:
    """One endpoint's discovered abilities (mutable, shared, lock-guarded)."""

    formats: list[str] = field(default_factory=lambda: list(FORMATS))
    tools: str = "native"
    # True once the endpoint answered with a native tool call.
    native_seen: bool = False
    context_tokens: int | None = None
    events: list[str] = field(default_factory=list)

    def best_format(self, wanted: str) -> str | None:
        """Return the strongest still-working format at most as strong as wanted."""
        allowed = FORMATS[FORMATS.index(wanted) :] if wanted in FORMATS else ()
        return next((f for f in allowed if f in self.formats), None)

    def reject_format(self, kind: str) -> None:
        """Remember that the endpoint refused this response_format."""
        with _lock:
            if kind in self.formats:
                self.formats.remove(kind)
                self.events.append(f"response_format {kind} rejected")

    def switch_tools(self, protocol: str, why: str) -> None:
        """Use another tool protocol for this endpoint from now on."""
        with _lock:
            if self.tools != protocol:
                self.events.append(f"tool protocol {self.tools} → {protocol}: {why}")
                self.tools = protocol


_lock = threading.Lock()
_known: dict[tuple[str, str], Capabilities] = {}


def capabilities(
    base_url: str,
    model: str,
    *,
    context_tokens: int = 0,
    discover: Callable[[str], int | None] = lambda url: None,
) -> Capabilities:
    """Return the shared Capabilities of an endpoint, discovering the window once."""
    key = (base_url, model)
    with _lock:
        caps = _known.get(key)
        if caps is None:
            caps = _known[key] = Capabilities()
        else:
            return caps
    found = context_tokens or discover(base_url) or 0
    with _lock:
        caps.context_tokens = found or None
        caps.events.append(
            f"context window {found} tokens" if found else "context window unknown"
        )
    return caps


def forget_all() -> None:
    """Forget every endpoint (tests start from a clean slate)."""
    with _lock:
        _known.clear()
