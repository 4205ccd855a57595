"""A count by a field's value counts that field, not every line that mentions it.

"How many entries of service.log have the level ERROR?" asks for the lines
whose level field is ERROR. ``grep -c ERROR service.log`` counts every line
that holds the word anywhere, so a message such as ``WARN previous ERROR state
cleared`` is counted too, and the number it prints is computed by a tool and
looks like evidence. When the request names a field and the value it must hold
(``level ERROR``, ``status 'FAILED'``, ``ERROR-level``), a claimed count stands
only where a command that tests a field printed it: awk comparing ``$N``,
``cut -f`` before the match, or a pattern anchored at the line's start.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterable

from roles.claims.command import parse_command
from roles.claims.command_queries import counted_files, selects_by_field
from roles.claims.computed import looks_for, printers
from roles.claims.evidence import parse_evidence, split_exit_code
from roles.claims.question_words import asks_for_count

_FIELDS = r"(?i:level|status|severity|state|priority|category|type|kind)"
# The value is in capitals or quotes, as the counted word is in roles.claims.computed:
# "with status done" names no value to look for.
FIELD_VALUE = re.compile(
    rf"\b(?P<field>{_FIELDS})(?:\s+(?:(?i:of|is)\s+)?|\s*[=:]\s*)"
    r"(?:(?P<q>['\"`])(?P<quoted>[^'\"`\n]+)(?P=q)|(?P<bare>[A-Z][A-Z0-9_]+)\b)"
    rf"|\b(?P<before>[A-Z][A-Z0-9_]+)[\s-]+(?P<after>{_FIELDS})\b"
)


def field_value(request: str) -> tuple[str, str]:
    """Return the field and the value a count question counts entries by
    (``("level", "ERROR")`` for "how many entries have the level ERROR"),
    else ``("", "")``."""
    if not asks_for_count(request):
        return "", ""
    found = FIELD_VALUE.search(request or "")
    if found is None:
        return "", ""
    if found["before"]:
        return found["after"].lower(), found["before"]
    return found["field"].lower(), found["quoted"] or found["bare"]


def miscounted(request: str, numbers: list[str], entries: list[str]) -> str:
    """Return why the claimed count is of the lines that mention the value and
    not of the entries whose field holds it, else ""."""
    field, value = field_value(request)
    if not value or not numbers:
        return ""
    loose = [(n, c) for n in numbers if (c := _mentions_only(n, value, entries))]
    if not loose or any(_in_field(n, value, entries) for n in numbers):
        return ""
    number, command = loose[0]
    counts = (
        f"every line that holds {value!r} anywhere, in a message too"
        if looks_for(value, command)
        else f"lines without looking for {value!r}"
    )
    return (
        f"the claimed {number} was printed by `{command}`, which counts {counts}, "
        f"not the entries whose {field} is {value!r}: "
        f"{_how(field, value, command, entries)}; the executor's claimed output is "
        "not evidence"
    )


def _mentions_only(number: str, value: str, entries: Iterable[str]) -> str:
    commands = [c for c, error in printers(number, entries) if c and not error]
    if not commands or any(_tests_a_field(c) for c in commands):
        return ""
    return commands[0]


def _in_field(number: str, value: str, entries: Iterable[str]) -> bool:
    return any(
        c and not error and _tests_a_field(c) and looks_for(value, c)
        for c, error in printers(number, entries)
    )


def _tests_a_field(command: str) -> bool:
    """Return True when a stage of ``command`` tests one field of a line (awk
    comparing ``$N``, ``cut -f``, a grep pattern anchored at the start)."""
    return any(selects_by_field(line) for line in parse_command(command).pipelines)


def _read_files(command: str) -> list[str]:
    """Return the files the programs of ``command`` read, in order."""
    programs = [p for line in parse_command(command).pipelines for p in line.programs]
    redirected = [r.target for p in programs for r in p.redirects if r.operator == "<"]
    return [f for p in programs for f in counted_files(p)] + redirected


def _how(field: str, value: str, command: str, entries: Iterable[str]) -> str:
    paths = _read_files(command)
    path = shlex.quote(paths[-1]) if paths else "FILE"
    position = _position(value, entries)
    if position:
        return (
            f"count the lines whose field {position} is {value!r} "
            f"(awk '${position} == \"{value}\"' {path} | wc -l)"
        )
    return (
        f"print a few of the lines that hold it (grep -m 5 {shlex.quote(value)} "
        f"{path}) to see which field holds the {field}, then count the lines whose "
        f"that field is {value!r} (awk '$N == \"{value}\"' {path} | wc -l, N the "
        "field's number)"
    )


def _position(value: str, entries: Iterable[str]) -> int:
    """Return the field (1-based, split on blanks) in which ``value`` stands
    most often among the lines that tool outputs showed, else 0. On a tie the
    earlier field: a level or a status is a column near the line's start, and a
    message that mentions the value comes after it."""
    seen: Counter[int] = Counter()
    for entry in entries:
        call = parse_evidence(entry)
        if call is None:
            continue
        for line in split_exit_code(call.output)[1].splitlines():
            fields = line.split()
            if value in fields:
                seen[fields.index(value) + 1] += 1
    if not seen:
        return 0
    return min(seen, key=lambda position: (-seen[position], position))
