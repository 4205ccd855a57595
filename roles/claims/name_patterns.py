r"""A count of files made by grepping a listing for an extension it does not anchor.

Asked "how many Python files are there under DIR?", a small executor runs
``ls -R DIR | grep -c .py``. The pattern takes every line that holds any
character followed by "py" anywhere: ``app.pyc``, ``__pycache__``,
``pyproject.toml``, ``happy.txt``, so the count is too high (26 where find
counts 17) and nothing in the output shows it. The answer stands only when the
pattern ends the name (``grep -c '\.py$'``) or the files are listed by name
(``find DIR -type f -name '*.py' | wc -l``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from roles.claims.command import parse_command
from roles.claims.command_queries import (
    GREPS,
    counts,
    is_inverted,
    lists_names,
    search_patterns,
)
from roles.claims.computed import printers

# An extension as a grep pattern, unanchored: ".py", "\.py", "*.py", "py".
EXTENSION = re.compile(r"^(?:\*|\\)?\.?[A-Za-z0-9]{1,6}$")


def loose_extension_count(value: str, entries: Iterable[str]) -> str:
    """Return the command that printed ``value`` when every command that did
    counts a listing's lines with an unanchored extension pattern; else "".
    Such a pattern only counts too many: its 0 is no file at all."""
    if value.strip("0.") == "":
        return ""
    commands = [command for command, _ in printers(value, entries)]
    if not commands or not all(loose_pattern(command) for command in commands):
        return ""
    return commands[0]


def loose_pattern(command: str) -> str:
    """Return the unanchored extension pattern with which ``command`` counts
    the names a listing printed (``ls -R | grep -c .py``, ``find | grep py |
    wc -l``), else ""."""
    for pipeline in parse_command(command).pipelines:
        if counts(pipeline) != "files":
            continue
        listed = False
        for program in pipeline.programs:
            listed = listed or lists_names(program)
            if listed and program.name in GREPS and not is_inverted(program):
                loose = [p for p in search_patterns(program) if EXTENSION.match(p)]
                if loose and not lists_names(program):
                    return loose[0]
    return ""


def loose_count_reason(value: str, command: str) -> str:
    """Return R4a's reason for a count ``command`` printed as ``value``."""
    ext = loose_pattern(command).lstrip("*\\.") or "py"
    return (
        f"the claimed {value} was printed by `{command}`, whose pattern is not "
        "anchored at the end of the name: it also counts names that only hold it "
        f"(x.{ext}c, {ext}_old/, my{ext}.txt); count the names that end in "
        f".{ext} (grep -c '\\.{ext}$', or find DIR -type f -name '*.{ext}' | wc -l)"
    )
