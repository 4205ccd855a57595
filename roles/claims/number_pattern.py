"""A pattern that asks for a bare number, met by a claim that states one.

A small planner writes ``{"type": "output_matches", "pattern": "^[0-9]+$"}`` to
say "the answer is a number". Read as written it needs a line holding nothing
but digits, which neither the executor's claim ("order total: 13952") nor the
tool's output ("order total: 13952") has, so the right answer fails; GGS then
reads a logical failure and blocks the program that printed it. Such a pattern
is met when the claim states exactly one number and a tool output shows that
number standing whole: the same ground a matched claim needs
(``roles.claims.checks._shown``).
"""

from __future__ import annotations

import re

from roles.claims.computed import NUMBER
from roles.claims.facts import appears, evidence_text, output_text
from roles.contracts import ExecutionResult

# A pattern that takes these whole, as bare numbers ...
BARE = ("13952", "7")
# ... and finds nothing in these lines, asks for a line that is only a number;
# one that takes a worded line too ("^\d+( lines)?$") names a format of its own.
WORDED = ("order total: 13952", "7 files", "7 lines", "count = 7")


def asks_bare_number(regex: re.Pattern) -> bool:
    """Return True when ``regex`` takes a bare number whole and no worded one."""
    return all(regex.fullmatch(text) for text in BARE) and not any(
        regex.search(text) for text in WORDED
    )


def one_number_shown(result: ExecutionResult) -> str:
    """Return the one number the claim states when a tool output shows it; else ""."""
    stated = set(NUMBER.findall(output_text(result.output)))
    if len(stated) != 1:
        return ""
    (number,) = stated
    return number if appears(number, evidence_text(result, reports=False)) else ""


def bare_number_met(regex: re.Pattern, pattern: str, result: ExecutionResult) -> str:
    """Return the evidence that a bare-number pattern is met; else ""."""
    number = one_number_shown(result) if asks_bare_number(regex) else ""
    if not number:
        return ""
    return f"/{pattern}/ asks for a number: the claim states {number}, shown by a tool"
