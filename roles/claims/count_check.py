"""Output checks a count question's answer need not meet.

The answer to "how many …" is a number, which R4a's evidence rule judges
(``roles.claims.computed``: computed, by a command that looks for what is counted). A
small planner also writes output checks the number cannot meet: a word of the
question ("rows" for "how many rows") or a line of the listing that was counted
(``.*\\.py$`` for "how many Python files"). Read as written they fail the right
count, and GGS then blocks the tools that computed it.
"""

from __future__ import annotations

import re
from typing import Any

from roles.claims.question_words import asks_for_count, unguarded_words
from roles.patterns import NEVER_MATCHES, read_placeholder, undelimited

# Lines a count is stated in. A pattern that finds none of them, and demands no
# digit, asks for a line of what was counted, not for the count.
COUNT_LINES = (
    "17",
    "17 files",
    "There are 17 .py files.",
    "Total: 17",
    "count = 17",
    "17 lines contain ERROR",
)
DIGIT = re.compile(r"\\d|[0-9]|\[:digit:\]")


def count_free(check: dict[str, Any], request: str) -> str:
    """Return how to name ``check`` when, under a count question, it demands a
    word of the question or a listing line rather than the number; else ""."""
    if not isinstance(check, dict) or not asks_for_count(request):
        return ""
    word = echoed_word(check, request)
    if word:
        return f"{word!r} (a word of the count question)"
    pattern = listing_pattern(check)
    if pattern:
        return f"/{pattern}/ (a line of a listing, which no count meets)"
    return ""


def echoed_word(check: dict[str, Any], request: str) -> str:
    """Return the word an output check demands when the word is one of the
    count question's and the count rule guards it; else ""."""
    kind = check.get("type")
    value = check.get("value" if kind == "output_contains" else "pattern")
    if kind not in ("output_contains", "output_matches") or not isinstance(value, str):
        return ""
    word = value.strip()
    plain = re.fullmatch(r"[A-Za-z_][\w-]*", word) is not None
    # A word the count is of stays a check unless the count rule guards it.
    guarded = word.lower() not in unguarded_words(request)
    return word if plain and guarded and appears_word(word, request) else ""


def listing_pattern(check: dict[str, Any]) -> str:
    """Return the pattern of an ``output_matches`` check that no line stating a
    count can meet and that demands no digit; else ""."""
    raw = check.get("pattern")
    if check.get("type") != "output_matches" or not isinstance(raw, str):
        return ""
    pattern, flags = undelimited(raw)
    pattern = read_placeholder(pattern)
    try:
        regex = re.compile(pattern, re.MULTILINE | flags)
    except re.error:
        return ""
    if not pattern.strip() or DIGIT.search(pattern) or NEVER_MATCHES.search(pattern):
        return ""
    return "" if any(regex.search(line) for line in COUNT_LINES) else pattern


def appears_word(value: str, text: str) -> bool:
    """Return True when ``value`` stands in ``text`` as whole words, in any case."""
    pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
    return bool(value) and re.search(pattern, text or "", re.IGNORECASE) is not None
