"""Tool classes: what a GGS MUST NOT blocks.

break_symmetry and a worsening change_approach block the tools of the failing
subtasks and demand a novel tool class (spec v0.8, Dynamic MUST NOT Injection).
The shell is not one class: counting with ``wc`` and summing with ``awk`` are
different approaches run through the same tool, and blocking the whole shell
leaves a task that only a command can finish (a sum over a CSV, running a
script) with no way to finish. So the classes of a shell call are the programs
it ran, blocked as ``shell:<program>``, and the shell stays open to every other
program. Commands that only move around, set state or print the text they are
given (``cd``, ``export``, ``mkdir``, ``echo``) are nobody's approach and are
never blocked: a script written with ``echo '…' > hello.py`` that held the
wrong text is fixed with the same ``echo`` and the right text. (An answer that
only echoes itself is no evidence anyway, ``roles.claims.evidence.only_echoes``.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from roles.claims.evidence import ToolCall, first_target
from roles.safety import programs

SHELL = "shell"
PREFIX = "shell:"
NEUTRAL = frozenset(
    {"cd", "pwd", "export", "set", "unset", "true", "false", "exit", "sleep"}
    | {"echo", "printf", "mkdir", "chmod", "touch"}
)


def tool_classes(tool: str, args: Mapping[str, Any]) -> list[str]:
    """Return the classes one call used: ``shell:<program>`` per program of a
    shell command (none for a command of neutral programs), else the tool."""
    command = args.get("command") if isinstance(args, Mapping) else None
    if tool != SHELL or not isinstance(command, str):
        return [tool]
    return [PREFIX + name for name in programs(command) if name not in NEUTRAL]


# Another program for what a blocked one did, named in its refusal: a small
# model told only "use another program" runs the blocked one again.
OTHER_WAYS = {
    "wc": (
        "grep -c '' FILE or awk 'END {print NR}' FILE count a file's lines; "
        "find DIR -type f -name '*.EXT' | grep -c . counts files"
    ),
    "find": "ls -R DIR or the glob tool list files",
    "grep": "awk '/WORD/' FILE or sed -n '/WORD/p' FILE print matching lines",
    "cat": "the read_file tool or head -n 200 FILE show a file",
    "ls": "the glob tool or find DIR -maxdepth 1 list a directory",
}


def other_ways(program: str) -> str:
    """Return what else does what ``program`` did, as a hint, or ""."""
    known = OTHER_WAYS.get(program)
    return f" ({known})" if known else ""


def blocked_program(command: str, blocked: Iterable[str]) -> str:
    """Return the first program of ``command`` that ``blocked`` holds, or ""."""
    names = {b[len(PREFIX) :] for b in blocked if b.startswith(PREFIX)}
    if not names:
        return ""
    return next((name for name in programs(command) if name in names), "")


def describe(blocked: str) -> str:
    """Return a blocked class as a reader says it: ``wc (in the shell)``."""
    if blocked.startswith(PREFIX):
        return f"{blocked[len(PREFIX) :]} (in the shell)"
    return blocked


def cut_call(call: ToolCall) -> str:
    """Return how memory and a result name a call whose target was cut short.

    A target longer than the evidence keeps ends in "…" (``python3 -c '…;
    prin…``); read back as a prior success, a small model runs it as written
    and gets a syntax error. Such a call is named by its classes instead
    ("shell:python3 (a long command, not kept)"); "" when the target is whole.
    """
    whole = first_target(call.args)
    if not call.target or call.target == whole:
        return ""
    what = "command" if call.tool == SHELL else "argument"
    names = ", ".join(tool_classes(call.tool, call.args)) or call.tool
    return f"{names} (a long {what}, not kept)"
