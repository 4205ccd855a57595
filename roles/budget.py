"""Fit a chat prompt into the endpoint's context window before it is sent.

Tokens are estimated from characters (``CHARS_PER_TOKEN``, on the safe side
for code and English). When the messages and the reply's reserve exceed the
window, the longest message other than the first system prompt is cut in the
middle (its head and tail kept) until they fit; the fixed system prompt stays
first and byte-identical so the server's prompt cache keeps reusing it, and is
cut only when nothing else is left to cut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CHARS_PER_TOKEN = 3.0
# Role, separators and the chat template's markup per message.
MESSAGE_OVERHEAD_TOKENS = 8
MIN_KEEP_CHARS = 200
CUT_MARK = "\n...[trimmed to fit the context window]...\n"


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Return a conservative token estimate of the messages."""
    total = 0
    for message in messages:
        content = message.get("content") or ""
        text = content if isinstance(content, str) else str(content)
        total += int(len(text) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS
        for call in message.get("tool_calls") or ():
            total += int(len(str(call)) / CHARS_PER_TOKEN)
    return total


def reply_reserve(context_tokens: int) -> int:
    """Return the tokens kept free for the reply: a quarter of the window, ≤ 2048.

    A 1.5B model's plan ran past 1024 tokens and was cut mid-JSON.
    """
    return min(2048, context_tokens // 4)


# The longest reply a role needs: a tool call or a verdict is short, a plan is
# not. A small model that falls into a repeating loop stops here, not at the
# window's reserve (2048 tokens is minutes on a CPU).
# R1's TaskSpec and R4b's verdict are a few hundred tokens; R2's plan keeps
# the reserve.
ROLE_REPLY_TOKENS = {"R1": 768, "R3": 1024, "R4a": 1024, "R4b": 1024}


def reply_limit(context_tokens: int, role: str) -> int:
    """Return ``max_tokens`` for a reply of ``role``: the reserve, or less."""
    return min(reply_reserve(context_tokens), ROLE_REPLY_TOKENS.get(role, 2048))


def fit(
    messages: Sequence[Mapping[str, Any]], context_tokens: int | None
) -> list[dict[str, Any]]:
    """Return the messages cut so that they and the reply reserve fit the window."""
    fitted = [dict(m) for m in messages]
    if not context_tokens:
        return fitted
    budget = context_tokens - reply_reserve(context_tokens)
    while (excess := estimate_tokens(fitted) - budget) > 0:
        index = _longest(fitted)
        if index is None:
            break
        text = fitted[index]["content"]
        keep = max(MIN_KEEP_CHARS, len(text) - int(excess * CHARS_PER_TOKEN) - 64)
        if keep >= len(text):
            break
        fitted[index]["content"] = _cut(text, keep)
    return fitted


def _longest(messages: list[dict[str, Any]]) -> int | None:
    """Return the index of the longest cuttable message (the system prompt last)."""
    candidates = [
        (len(m.get("content") or ""), i)
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), str)
        and len(m["content"]) > MIN_KEEP_CHARS + len(CUT_MARK)
    ]
    later = [c for c in candidates if not (c[1] == 0 and _is_system(messages[0]))]
    pool = later or candidates
    return max(pool)[1] if pool else None


def _is_system(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "system"


def _cut(text: str, keep: int) -> str:
    head = keep // 3
    return text[:head] + CUT_MARK + text[len(text) - (keep - head) :]
