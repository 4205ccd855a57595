"""How R4a reads a planner's ``output_matches`` pattern.

A small planner writes patterns that say what it wants rather than match it
("number", "/^[0-9]+$/", ".*"); these read such a pattern for what it means.
"""

from __future__ import annotations

import re

# A pattern written with a script language's delimiters, "/^\d+$/i": the "/"
# before "^" or after "$" makes it unmatchable as written, so its meaning is plain.
_DELIMITED = re.compile(r"^/(\^.*|.*\$)/([ims]*)$", re.DOTALL)


def undelimited(pattern: str) -> tuple[str, int]:
    """Return ``pattern`` without script-style ``/…/flags`` delimiters, and its
    flags, when the delimited form could never match; else it as written."""
    found = _DELIMITED.match(pattern)
    if found is None:
        return pattern, 0
    flags = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}
    return found.group(1), sum({flags[f] for f in found.group(2)})


# A pattern that names what it wants instead of matching it: "number" for
# r"\d+". A small model writes these; read literally they match only prose.
PLACEHOLDERS = {
    "number": r"\d+",
    "integer": r"\d+",
    "digits": r"\d+",
    "<number>": r"\d+",
    "<integer>": r"\d+",
}
# The word of a pattern that only wraps it in "match anything": ".*number.*"
# names what it wants as "number" does.
_WRAPPED = re.compile(r"\^?(?:\.[*+])?(?P<word><?\w+>?)(?:\.[*+])?\$?")


def placeholder_word(pattern: str) -> str:
    """Return ``pattern`` stripped and lowered, without a ``.*``/``^``/``$``
    wrapping around one word (".*number.*" → "number")."""
    text = pattern.strip()
    found = _WRAPPED.fullmatch(text)
    return (found["word"] if found else text).lower()


def read_placeholder(pattern: str) -> str:
    r"""Return the pattern a placeholder word stands for ("number", ".*number.*"
    → ``\d+``), else ``pattern`` as written."""
    return PLACEHOLDERS.get(placeholder_word(pattern), pattern)


def names_no_format(pattern: str) -> bool:
    """Return True when ``pattern`` is "regex" or "pattern", however wrapped."""
    return placeholder_word(pattern) in NO_FORMAT


# "regex" or "pattern" names no format at all: any output that is not blank
# meets it (R4a's evidence rule and the other checks still judge the output).
NO_FORMAT = ("regex", "<regex>", "pattern", "<pattern>")
# A pattern that matches each of these whole (".*", "^.+$") matches any line:
# it names no format either.
ANY_TEXT = ("x", "The total is 1,250.", "/srv/a b.txt: 3")
# "$" before a word can never match: such a pattern ("ls -l $directory |
# grep -c '.*\.py'") is a command copied into the check, not a format.
NEVER_MATCHES = re.compile(r"(?<!\\)\$[A-Za-z_{]")

# An ``output_contains`` value written as a regex ("port=([0-9]+)", "total: \d+"):
# a class with a repeat, an escape class, or ".*"/".+". Plain text hardly ever
# holds these, so when the text itself is not found it is read as a pattern.
_REGEX_SYNTAX = re.compile(r"\\[dwsb]|\[[^\]]+\][+*?{]|\.[*+]|\(\?")


def written_as_regex(text: str) -> bool:
    """Return True when ``text`` uses regex syntax and compiles as a regex."""
    if not _REGEX_SYNTAX.search(text):
        return False
    try:
        re.compile(text)
    except re.error:
        return False
    return True
