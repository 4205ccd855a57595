"""The commands that count a CSV file's rows by a column's value, and that find
a column's highest or lowest value.

"How many items in inventory.csv have a quantity of 0?" names a column of the
file's header (``quantity``) and the value it must hold (``0``). A small model
that read the file states a count it made up, and "run a command that prints
it (wc -l, grep -c, awk)" leaves it to guess which: ``grep -c 0`` counts every
line with a 0 anywhere. Once the attempt has read the one CSV file, the column
and the value are plain, and so is the command.

"What is the highest price in prices.csv?" is answered by one of the values the
file holds, so a claim that states one is shown by the file whichever value it
is; only a command that compares them all shows which one is the highest.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from roles.claims.computed import QUOTED_COMMA
from roles.claims.evidence import is_failed_call, parse_evidence, split_exit_code
from roles.claims.question_words import asks_for_count

# "a quantity of 0", "status is 'shipped'", "region = EU", "the level: ERROR".
_VALUE = (
    r"\s*(?:(?:of|is|equal to|equals|=|:)\s*)?"
    r"(?:(['\"`])(?P<quoted>[^'\"`\n]+)\1|(?P<bare>[\w.+-]+))"
)
NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
HIGHEST = r"highest|largest|biggest|maximum|max|greatest|most expensive"
EXTREME = re.compile(
    rf"\b(?:(?P<high>{HIGHEST})|lowest|smallest|minimum|min|least|cheapest)\b",
    re.IGNORECASE,
)


def column_count_command(request: str, entries: Iterable[str]) -> str:
    """Return an awk command counting the data rows of the one CSV file the
    attempt read whose column, named in ``request``, holds the value named
    after it; else "" (no count asked, no CSV or several read, no column or
    several named, or a value that no row of that column holds)."""
    if not asks_for_count(request):
        return ""
    reads = _csv_reads(entries)
    if len(reads) != 1:
        return ""
    path, text = reads.popitem()
    if QUOTED_COMMA.search(text):
        return ""
    lines = text.strip().splitlines()
    header = [field.strip() for field in lines[0].split(",")] if lines else []
    found = [
        (index, value)
        for index, field in enumerate(header)
        if field and (value := _value_after(field, request))
    ]
    if len(found) != 1:
        return ""
    index, value = found[0]
    rows = [line.split(",") for line in lines[1:]]
    if not any(len(row) > index and row[index].strip() == value for row in rows):
        return ""
    column = index + 1
    test = f"${column}=={value}" if NUMBER.fullmatch(value) else f'${column}=="{value}"'
    return f"awk -F, 'NR>1 && {test} {{n++}} END {{print n+0}}' {shlex.quote(path)}"


def _value_after(field: str, request: str) -> str:
    found = re.search(rf"\b{re.escape(field)}\b{_VALUE}", request, re.IGNORECASE)
    if found is None:
        return ""
    value = found["quoted"] or found["bare"].rstrip(".")
    return "" if "'" in value or '"' in value else value


def _csv_reads(entries: Iterable[str]) -> dict[str, str]:
    reads: dict[str, str] = {}
    for entry in entries:
        call = parse_evidence(entry)
        if call is None or call.tool != "read_file" or is_failed_call(call):
            continue
        path = call.args.get("path")
        if isinstance(path, str) and path.lower().endswith(".csv"):
            reads.setdefault(path, split_exit_code(call.output)[1])
    return reads


def column_extreme_command(request: str, entries: Iterable[str]) -> str:
    """Return an awk command printing the highest (or lowest) value of the one
    column of the one CSV file the attempt read that ``request`` names and asks
    the highest (lowest) of; else ""."""
    asked = EXTREME.search(request)
    reads = _csv_reads(entries) if asked else {}
    if len(reads) != 1:
        return ""
    path, text = reads.popitem()
    lines = text.strip().splitlines()
    header = [field.strip() for field in lines[0].split(",")] if lines else []
    named = [
        index
        for index, field in enumerate(header)
        if field and re.search(rf"\b{re.escape(field)}\b", request, re.IGNORECASE)
    ]
    if len(named) != 1 or QUOTED_COMMA.search(text):
        return ""
    column = named[0] + 1
    sign = ">" if asked["high"] else "<"
    program = f"NR>1 && (!n++ || ${column}{sign}m) {{m=${column}}} END {{print m}}"
    return f"awk -F, '{program}' {shlex.quote(path)}"
