"""The canonical tool-call evidence entry, written by R3 and read by GGS and memory.

One entry per executed tool call::

    shell: {"command": "ls /tmp"} → a.txt
    b.txt

The tool name, ``": "``, the arguments as a JSON object, ``" → "``, then the
(stripped) output: whole up to 1000 characters, else its first 700 and last 300
joined by `` … `` (a count's total or a traceback's last line is at the end).
The parser decodes the JSON with ``raw_decode``, so arrows and colons inside the
arguments or the output are safe.

A shell output, in an entry or in an ExecutionResult, starts with its exit code
(``split_exit_code`` reads it back)::

    [exit code 2]
    ls: cannot access 'nope'
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

ARROW = " → "
OUTPUT_HEAD = 700
OUTPUT_TAIL = 300
ELLIPSIS = " … "
TARGET_KEYS = ("query", "command", "path", "url")
TARGET_LIMIT = 120
EXIT_LINE = re.compile(r"^\[exit code (-?\d+)\]\n?")

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
# The file tools that show a file's text, and those that write one.
READ_TOOLS = ("read_file", "read_file_lines")
WRITE_TOOLS = ("write_file", "create_file", "apply_edit")
# Tools whose failures are raised as ``ERROR: …``: their other output is data.
DATA_TOOLS = (*READ_TOOLS, *WRITE_TOOLS, "glob", "search", "fetch_url")
_ECHO = re.compile(r"^\s*(?:echo|printf)\b[^$`|<>;&()\n\\]*$")
# Inside single quotes the shell expands nothing: `, $, | and ; are text there.
SINGLE_QUOTED = re.compile(r"'[^']*'")
_WORD = re.compile(r"\w+")
_DECODER = json.JSONDecoder()
# Why a call counts as failed when only its output head is known: these are the
# markers our tools and shells print on failure (R4a's environmental regex plus
# generic error words).
_FAILED_OUTPUT = re.compile(
    r"(^error\b|\berror:|\[LAW1\]|permission denied|no such file|not found|"
    r"not exist|connection refused|timed? ?out|network error|network is "
    r"unreachable|could not resolve|couldn't connect|name resolution|"
    r"exit (code|status) [1-9]|traceback \(most recent call last\))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ToolCall:
    """One parsed evidence entry; ``target`` is short enough for a memory tag."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    output: str = ""


def format_evidence(tool: str, args: dict[str, Any], output: str) -> str:
    """Return the canonical evidence entry for one tool call."""
    if not isinstance(tool, str) or not _TOOL_NAME.match(tool):
        raise ValueError(f"tool name must be a non-empty identifier, got {tool!r}")
    if not isinstance(args, dict):
        raise TypeError(f"args must be a dict, not {type(args).__name__}")
    encoded = json.dumps(args, ensure_ascii=False, default=str)
    text = str(output if output is not None else "").strip()
    return f"{tool}: {encoded}{ARROW}{_shortened(text)}"


def _shortened(text: str) -> str:
    if len(text) <= OUTPUT_HEAD + OUTPUT_TAIL:
        return text
    return f"{text[:OUTPUT_HEAD]}{ELLIPSIS}{text[-OUTPUT_TAIL:]}"


def parse_evidence(entry: object) -> ToolCall | None:
    """Return the ToolCall of an evidence entry, or None when it is not one."""
    if not isinstance(entry, str):
        return None
    tool, sep, rest = entry.partition(": ")
    tool = tool.strip()
    if not sep or not _TOOL_NAME.match(tool):
        return None
    rest = rest.lstrip()
    try:
        args, end = _DECODER.raw_decode(rest)
    except json.JSONDecodeError:
        return None
    if not isinstance(args, dict):
        return None
    return ToolCall(tool, args, first_target(args, TARGET_LIMIT), _output(rest[end:]))


def first_target(args: dict[str, Any], limit: int | None = None) -> str:
    """Return the first non-empty query/command/path/url, else a glob's pattern
    under its root (the same empty pattern is a failed input too), cut at
    ``limit`` chars."""
    for key in TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return _cut(value.strip(), limit)
    pattern, root = args.get("pattern"), args.get("root")
    if isinstance(pattern, str) and pattern.strip():
        where = root.strip() if isinstance(root, str) else ""
        return _cut(posixpath.join(where, pattern.strip()), limit)
    return ""


def _cut(value: str, limit: int | None) -> str:
    return value[:limit] + "…" if limit is not None and len(value) > limit else value


def only_echoes(entry: object) -> bool:
    """Return True when the entry is a shell call that printed literal text only.

    ``echo 1144`` shows nothing but the words the model gave it: no expansion,
    substitution, pipe or redirection, so its output is the claim, not evidence.
    What stands in single quotes is literal (``echo 'the `f` function works'``).
    """
    call = parse_evidence(entry)
    if call is None or call.tool != "shell":
        return False
    command = call.args.get("command")
    if not isinstance(command, str):
        return False
    return _ECHO.match(SINGLE_QUOTED.sub("''", command)) is not None


def shows_data(call: ToolCall) -> bool:
    """Return True when the call printed something of what it looked at.

    An output made only of words the command itself holds (``grep -q k f &&
    echo yes``, ``test -f f || echo missing``) shows the command's words, and
    a silent test (``grep -q``) shows nothing: only an exit status, which says
    that a pattern matched, not what the matching line says. A failed call
    shows its error, not the data.
    """
    if is_failed_call(call):
        return False
    output = split_exit_code(call.output)[1].strip()
    if not output:
        return False
    if call.tool != "shell":
        return True
    command = str(call.args.get("command") or "").lower()
    return any(word not in command for word in _WORD.findall(output.lower()))


def is_failed_call(call: ToolCall) -> bool:
    """Return True when the call's output head reports an error.

    The file and web tools fail with ``ERROR: …``; anything else they return is
    data (a settings file that says ``timeout = 30`` is a successful read).
    """
    if call.output.lstrip().startswith(("ERROR:", "[LAW1]")):
        return True
    if call.tool in DATA_TOOLS:
        return False
    return bool(_FAILED_OUTPUT.search(call.output))


def split_exit_code(output: str) -> tuple[int | None, str]:
    """Return the exit code a tool output starts with (None if absent), and the rest."""
    match = EXIT_LINE.match(output)
    if match is None:
        return None, output
    return int(match.group(1)), output[match.end() :]


def _output(tail: str) -> str:
    stripped = tail.lstrip(" ")
    if stripped.startswith("→"):
        return stripped[1:].removeprefix(" ")
    return tail.strip()
