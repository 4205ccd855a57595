"""A command that failed for a temporary reason is run again as it was.

A command that exits with sysexits' EX_TEMPFAIL (75), or whose output says the
failure is temporary ("try again", "resource temporarily unavailable", "server
busy", "rate limit"), may well succeed when run again: a different approach, or
blocking that command, is the wrong correction. R4a asks the executor to rerun
it (one more attempt of the fast loop) instead of stopping on the executor's
"failed"; a second temporary failure fails the subtask as any failure does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from roles.evidence import parse_evidence, split_exit_code

TEMPFAIL = 75
TRANSIENT = re.compile(
    r"\btry again\b|\btemporar(?:y|ily)\b|\bbusy\b|\brate.?limit|too many requests",
    re.IGNORECASE,
)


def transient_failure(tool_calls: Iterable[str]) -> tuple[str, str]:
    """Return the last shell command whose last run failed for a temporary
    reason, and the line that says so; ``("", "")`` when there is none."""
    last: dict[str, tuple[int | None, str]] = {}
    for entry in tool_calls:
        call = parse_evidence(entry)
        if call is None or call.tool != "shell":
            continue
        command = str(call.args.get("command") or "").strip()
        last.pop(command, None)  # keep the order of the latest runs
        last[command] = split_exit_code(call.output)
    for command, (code, body) in reversed(last.items()):
        if not command or code in (None, 0):
            continue
        line = next((t for t in body.splitlines() if TRANSIENT.search(t)), "")
        if code == TEMPFAIL or line:
            return command, (line or f"exit code {code}").strip()[:200]
    return "", ""
