"""R3's second look at a ``failed`` answer given while turns remain.

A small model often reports failure right after its first failed call, even
when that call's result says what to do instead (a hint to use grep, a file of
the same name elsewhere). Once per attempt such an answer is sent back with the
last tool result, so the model tries another way before the attempt is spent;
a second ``failed`` is taken as it is. An operator's Law 1 denial is final and
is never sent back.
"""

from __future__ import annotations

from collections.abc import Sequence

from roles.jsonparse import JSONExtractError, extract_json
from roles.toolloop import ToolCallRecord
from roles.tools import head_tail

LAST_RESULT_CAP = 600
SEND_BACK = (
    "Not yet: you reported failed after {calls}, and you still have turns left. "
    "One failed call is not failure.{last} Follow any hint in it, or try a "
    "different command, path or tool. Report failed only when no tool can do it."
)


def review_failed(
    final: str, calls: Sequence[ToolCallRecord], reviews: int
) -> str | None:
    """Return the message that sends a first ``failed`` back, else None."""
    if reviews or _status(final) != "failed" or _denied(calls):
        return None
    count = f"{len(calls)} tool call{'' if len(calls) == 1 else 's'}"
    last = ""
    if calls:
        output = head_tail(calls[-1].output.strip(), LAST_RESULT_CAP)
        last = f" The last tool result ({calls[-1].name}):\n{output}\n"
    return SEND_BACK.format(calls=count, last=last)


def _status(final: str) -> str:
    try:
        value = extract_json(final)
    except JSONExtractError:
        return ""
    return str(value.get("status", "")) if isinstance(value, dict) else ""


def _denied(calls: Sequence[ToolCallRecord]) -> bool:
    return any(c.output.startswith("[LAW1]") and "denied" in c.output for c in calls)
