"""A sum over a CSV whose fields hold quoted commas is not computed by splitting
at every comma.

``awk -F, '{s+=$3}'`` and ``cut -d, -f3`` split ``1,"Smith, Jones & Co",500``
inside the quotes, so on every such row the third field is part of the name and
the sum they print is wrong, though a tool computed it. When the attempt's tool
outputs show a quoted field with a comma and every command that printed the
claimed sum splits at commas, R4a refuses it and names a command that parses
the CSV (``roles.claims.computed.csv_total_command``) where the request and the file
read make the column plain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from roles.claims.computed import QUOTED_COMMA, column_total_command, printers
from roles.claims.evidence import parse_evidence
from roles.claims.question_words import asks_for_sum

SPLITS_AT_COMMAS = re.compile(
    r"\bawk\b[^|;&]*-F\s*['\"]?,|\bFS\s*=\s*['\"],|\bcut\b[^|;&]*-d\s*['\"]?,"
)


def split_quoted(request: str, numbers: Sequence[str], entries: Sequence[str]) -> str:
    """Return why the claimed sum is wrong when it was split at quoted commas,
    else ""."""
    if not numbers or not asks_for_sum(request):
        return ""
    sample = _quoted_comma(entries)
    if not sample:
        return ""
    for number in numbers:
        commands = [c for c, error in printers(number, entries) if c and not error]
        if commands and all(SPLITS_AT_COMMAS.search(c) for c in commands):
            command = column_total_command(request, entries)
            how = f" ({command})" if command.startswith("python3") else ""
            return (
                f"the claimed {number} was printed by `{commands[0]}`, which splits "
                f"each line at every comma, also inside quoted fields ({sample}), so "
                "on those rows the column is another field: sum the column with a "
                f"CSV parser such as Python's csv module{how}; the executor's claimed "
                "output is not evidence"
            )
    return ""


def _quoted_comma(entries: Sequence[str]) -> str:
    for entry in entries:
        call = parse_evidence(entry)
        found = QUOTED_COMMA.search(call.output) if call else None
        if found:
            return found.group(0).lstrip(",")
    return ""
