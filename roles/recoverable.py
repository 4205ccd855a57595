"""A failure that says how to go on is followed, not given up on.

Two kinds of tool failure carry their own way forward, and R4a asks the
executor to take it (one more attempt of the fast loop) instead of stopping on
the executor's "failed"; a second failure fails the subtask as any failure does.

- A command that exits with sysexits' EX_TEMPFAIL (75), or whose output says the
  failure is temporary ("try again", "resource temporarily unavailable", "server
  busy", "rate limit"), may well succeed when run again: a different approach,
  or blocking that command, is the wrong correction.
- A read of a file that is not there (or that GGS blocked, or that the run's
  user may not read), whose error names files of that name elsewhere or of that
  stem with another extension (``roles.tools.files``, ``roles.tools.filetools``):
  the file asked for is most likely one of them. A shell command told "No such
  file or directory" or "Permission denied" carries the same names in a
  bracketed line of its result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from roles.claims.deletions import deleting_command
from roles.claims.evidence import READ_TOOLS, parse_evidence, split_exit_code

TEMPFAIL = 75
TRANSIENT = re.compile(
    r"\btry again\b|\btemporar(?:y|ily)\b|\bbusy\b|\brate.?limit|too many requests",
    re.IGNORECASE,
)
# roles.tools.files.not_found's "did you mean", after "no such file: PATH".
NAMESAKES = re.compile(
    r"(?:files named '[^'\n]*' under [^:\n]+|files of the same name with another "
    r"extension): (?P<named>[^)\n]+)"
)

# roles.tools.filetools's lines on a shell result: "[no such file: PATH (…)]",
# "[PATH: the run's user may not read it; files named …]".
SHELL_HINT = re.compile(
    r"^\[(?:no such file: (?P<missing>\S+)[ ;]|(?P<denied>\S+): the run's user "
    r"may not read it;)",
    re.MULTILINE,
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


def namesakes(tool_calls: Iterable[str]) -> tuple[str, str]:
    """Return the path of the attempt's last tool call when it was a read of a
    missing file whose error names files to read instead, and those files;
    ``("", "")`` otherwise."""
    tool_calls = list(tool_calls)
    calls = [c for c in map(parse_evidence, tool_calls) if c is not None]
    if calls and calls[-1].tool == "shell":
        path, named = _shell_namesakes(calls[-1].output)
        # A file the attempt deleted is missing on purpose.
        return ("", "") if deleting_command(path, tool_calls) else (path, named)
    if not calls or calls[-1].tool not in READ_TOOLS:
        return "", ""
    last = calls[-1]
    said = last.output.strip()
    found = NAMESAKES.search(said) if said.startswith("ERROR:") else None
    path = last.args.get("path")
    if found is None or not isinstance(path, str):
        return "", ""
    return path, found["named"].strip()


def _shell_namesakes(output: str) -> tuple[str, str]:
    """Return the first path a shell result's bracketed line says is missing or
    closed and the files it names instead; ``("", "")`` when there is none."""
    for line in output.splitlines():
        hint = SHELL_HINT.match(line)
        found = NAMESAKES.search(line) if hint else None
        if found is not None:
            path = hint["missing"] or hint["denied"]
            return path, found["named"].strip().rstrip("]")
    return "", ""
