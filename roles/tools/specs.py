"""The executor's tools as the model sees them, and the check of a call against them.

A call is refused (ToolError) when its tool is unknown or blocked by GGS, its
arguments are not a JSON object with every required string, or its target
(``query``, ``command``, ``path`` or ``url``) is one GGS blocked.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from roles.claims.evidence import first_target
from roles.llm.client import ToolSpec
from roles.toolclass import SHELL, blocked_program, other_ways
from roles.tools.errors import ToolError

TARGET_KEYS = ("query", "command", "path", "url")


def _spec(
    name: str,
    description: str,
    optional: tuple[str, ...] = (),
    numbers: tuple[str, ...] = (),
    **props: str,
) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {
            k: {"type": "integer" if k in numbers else "string", "description": v}
            for k, v in props.items()
        },
        "required": [k for k in props if k not in optional],
    }
    return ToolSpec(name, description, schema)


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            "shell",
            "Run a bash command in the workspace; the result starts with "
            "'[exit code N]' followed by stdout and stderr.",
            command="The bash command line.",
        ),
        _spec(
            "glob",
            "List files matching a pattern ('**' recurses), e.g. '**/*.py'.",
            ("root",),
            pattern="Glob pattern relative to root.",
            root="Directory to search (default: the workspace).",
        ),
        _spec("read_file", "Return a text file's contents.", path="File path."),
        _spec(
            "read_file_lines",
            "Return lines start to end of a text file, each as 'L<n>: text'.",
            (),
            ("start", "end"),
            path="File path.",
            start="First line, from 1.",
            end="Last line (at most 200 a call).",
        ),
        _spec(
            "write_file",
            "Write text to a file (relative paths go into the workspace; parent "
            "directories are created).",
            path="File path.",
            content="The full text to write.",
        ),
        _spec(
            "create_file",
            "Create a new file; fails if the path exists.",
            path="File path.",
            content="The full text.",
        ),
        _spec(
            "apply_edit",
            "Replace the one occurrence of old in a file with new.",
            path="File path.",
            old="Exact text now in the file, without line numbers.",
            new="Text to put in its place.",
        ),
        _spec(
            "search",
            "Search the web; returns titles, snippets and URLs.",
            query="The search query.",
        ),
        _spec("fetch_url", "Fetch an http(s) page as text.", url="The URL."),
    )
}


# The tools that change a file in place or read it by line numbers: a request
# that makes or changes files needs them, a question does not.
EDIT_TOOLS = ("read_file_lines", "create_file", "apply_edit")
# The answer kinds of a request that may make or change files (roles.claims.question).
CHANGING_ANSWERS = ("effect", "text")


def not_offered(answer: str) -> tuple[str, ...]:
    """Return the tools a request whose answer is of kind ``answer`` is not
    offered: a question (a count, a path, a yes or no …) is answered by
    reading, never by editing its data. Measured with the 1.5B model: offered
    them on "how many lines does FILE have?", it read the file, read it again by
    lines and called ``apply_edit`` on it (refused), round after round."""
    return () if answer in CHANGING_ANSWERS else EDIT_TOOLS


def failed_input(name: str, args: Any) -> str:
    """Return the input a failed call of ``name`` blocks: its target, and the
    other arguments it needs when it has some.

    A call that only names its target (a command, a path to read, a query)
    failed on that target. A call that also needs what to put there
    (``apply_edit``'s old text, ``write_file``'s content, a line range) may have
    failed on those: the file stays open to be read and edited again, and only
    the same call with the same arguments is blocked. An edit whose old text
    was not in the file used to block the file itself, ``read_file`` included.
    """
    if not isinstance(args, dict):
        return ""
    target = first_target(args)
    spec = TOOL_SPECS.get(name)
    rest = [
        k
        for k in (spec.parameters["required"] if spec else ())
        if k not in TARGET_KEYS and k != "pattern"
    ]
    if not rest or not target:
        return target
    said = " ".join(f"{k}={_first_line(args.get(k))!r}" for k in sorted(rest))
    return f"{name} {target} {said}"


def _first_line(value: Any, limit: int = 40) -> str:
    lines = str(value if value is not None else "").strip().splitlines() or [""]
    line = lines[0].strip()
    more = len(line) > limit or len(lines) > 1
    return line[:limit] + ("…" if more else "")


def refuse(
    name: str,
    args: Any,
    blocked_tools: frozenset[str],
    blocked_targets: frozenset[str],
    more: Collection[str] = (),
) -> None:
    """Raise ToolError for an unknown, malformed or GGS-blocked call.

    ``more`` names the tools offered beside the built-in ones (MCP servers'),
    whose arguments their own schemas check.
    """
    if name not in TOOL_SPECS and name not in more:
        known = ", ".join([*TOOL_SPECS, *more])
        raise ToolError(f"unknown tool {name!r}; available: {known}")
    if name in blocked_tools:
        raise ToolError(
            f"blocked by GGS: tool {name!r} was used in a subtask that failed in "
            "an earlier round — choose another approach"
        )
    if not isinstance(args, dict):
        raise ToolError(f"{name} arguments must be a JSON object")
    schema = TOOL_SPECS[name].parameters if name in TOOL_SPECS else {"required": []}
    for key in schema["required"]:
        if schema["properties"][key]["type"] == "integer":
            continue  # a number or its digits: the tool reads it
        if not isinstance(args.get(key), str):
            raise ToolError(f"{name} needs a string argument {key!r}")
    if name == SHELL:
        program = blocked_program(args["command"], blocked_tools)
        if program:
            raise ToolError(
                f"blocked by GGS: the program {program!r} was used in a subtask "
                "that failed in an earlier round — get this with another program "
                f"or tool{other_ways(program)}"
            )
    for key in TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip() in blocked_targets:
            raise ToolError(
                f"blocked by GGS: {key} {value.strip()!r} failed in an earlier "
                "round — choose another approach"
            )
    for target in dict.fromkeys((first_target(args), failed_input(name, args))):
        if target and target in blocked_targets:
            # A glob is blocked by its pattern under its root, an edit by
            # its path and the text it was given.
            raise ToolError(
                f"blocked by GGS: {target!r} failed in an earlier round — choose "
                "another approach"
            )
