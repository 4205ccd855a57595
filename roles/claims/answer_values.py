"""The one value a claim states, of the kind a question asks, that a tool showed.

A number, a path, a name or names, or a yes or no::

    claimed_value("number", "There are 17.", calls)  # "17", when a call printed 17
    claimed_value("names", "alice and farid", calls, asked)  # "alice, farid"

None when the claim states none of them, or several (which of them answers is
not for code to guess).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from roles.claims.evidence import (
    ToolCall,
    is_failed_call,
    parse_evidence,
    split_exit_code,
)
from roles.claims.facts import appears

__all__ = ["ABSOLUTE", "NAME", "body", "claimed_value", "shown", "successful"]

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\w)")
PATH = re.compile(r"(?<![\w.])(?:/[\w.@+-]+)+/?|(?<![\w/])[\w@+-]+\.[A-Za-z]\w{0,7}\b")
# An absolute path as a claim writes it.
ABSOLUTE = re.compile(r"(?<![\w.])(?:/[\w.@+-]+)+/?")
NAME = re.compile(r"[\w@+-]*[A-Za-z][\w.@+-]*\w|[A-Za-z]")
YES = frozenset({"yes", "true", "enabled", "on"})
NO = frozenset({"no", "false", "disabled", "not", "off", "none"})


def claimed_value(
    kind: str, claim: str, calls: Sequence[ToolCall], asked: str = ""
) -> str | None:
    """Return the one value of ``kind`` the claim states that a tool showed,
    or None when it states none or several; a name is none of the words of
    ``asked`` (the request)."""
    if kind == "number":
        found = [n for n in NUMBER.findall(_without_paths(claim)) if shown(n, calls)]
        values = {float(n) for n in found}
    elif kind == "path":
        found = [p for p in PATH.findall(claim) if shown(p, calls)]
        values = {posixpath.basename(p.rstrip("/")) for p in found}
    elif kind == "yes_no":
        words = {w.lower() for w in NAME.findall(claim)}
        said = {"yes"} if words & YES else set()
        said |= {"no"} if words & NO else set()
        return said.pop() if len(said) == 1 and calls else None
    else:
        words = {w.lower() for w in NAME.findall(asked)}
        found = [
            w
            for w in NAME.findall(_without_paths(claim))
            if len(w) > 1 and w.lower() not in words and shown(w, calls)
        ]
        values = {w.lower() for w in found}
        if kind == "names":
            return ", ".join(sorted(values)) if values else None
    return found[0] if len(values) == 1 else None


def successful(entries: Sequence[str]) -> list[ToolCall]:
    """Return the calls of ``entries`` that succeeded (exit code 0 or none)."""
    calls = [c for c in map(parse_evidence, entries) if c is not None]
    return [c for c in calls if not is_failed_call(c) and _exit_ok(c)]


def _exit_ok(call: ToolCall) -> bool:
    code, _ = split_exit_code(call.output)
    return code in (None, 0)


def body(call: ToolCall) -> str:
    """Return what a call printed, without its exit code line."""
    return split_exit_code(call.output)[1]


def shown(value: str, calls: Sequence[ToolCall]) -> bool:
    """Return True when a call of ``calls`` printed ``value`` as a whole token."""
    return any(appears(value, body(c)) for c in calls)


def _without_paths(text: str) -> str:
    return ABSOLUTE.sub(" ", text)
