"""An awk program's text read for what it selects and what its END block prints.

The shell passes awk its program as one word; what that word does is awk's
grammar, not the shell's, and the few patterns here read the part R4a needs::

    awk_counts("/ERROR/{n++} END{print n}")  # "matches"
    awk_counts("NR>1{s+=$4} END{print s}")  # "sum"
    awk_role("!seen[$1]++")  # "distinct"
"""

from __future__ import annotations

import re

__all__ = ["awk_counts", "awk_patterns", "awk_role", "awk_rules", "awk_tests_a_field"]

SUM = re.compile(r"([A-Za-z_]\w*)\s*\+=\s*\$")
TALLY = re.compile(r"([A-Za-z_]\w*)\s*(?:\+\+|\+=\s*1\b)|\+\+\s*([A-Za-z_]\w*)")
PRINTS_NR = re.compile(r"\bprintf?\b[^;}]*\bNR\b")
KEYS = re.compile(r"\blength\s*\(\s*\w+\s*\)|\bfor\s*\(\s*\w+\s+in\b")
SEEN = re.compile(r"!\s*\w+\s*\[[^\]]*\]\s*\+\+")
# A header skip (NR>1) selects no line by what it holds.
ROW_NUMBER = re.compile(r"\s*NR\s*(?:[<>]=?|[=!]=)\s*\d+\s*")
# A test of one field: ``$2 == "ERROR"``, ``$3 ~ /x/``.
FIELD_TEST = re.compile(r"\$\d+\s*(?:==|!=|~)|(?:==|~)\s*\$\d+")
REGEX = re.compile(r"(?:^|[\s(!~,;{&|])/((?:\\.|[^/\\\n])+)/")
COMPARED = re.compile(
    r'(?:==|!=|~)\s*"((?:\\.|[^"\\])*)"|"((?:\\.|[^"\\])*)"\s*(?:==|!=)'
)


def awk_counts(code: str) -> str:
    """Return what the END block of ``code`` prints: ``sum``, ``average``,
    ``lines`` (NR, or a tally of every line), ``matches`` (a tally of selected
    lines), ``distinct`` (the keys of an array), or ""."""
    rules = awk_rules(code)
    end = " ".join(action for pattern, action in rules if pattern.strip() == "END")
    body = [(p, a) for p, a in rules if p.strip() not in ("BEGIN", "END")]
    if not end:
        return ""
    if KEYS.search(end):
        return "distinct"
    sums = {name for _, action in body for name in SUM.findall(action)}
    if any(re.search(rf"\b{name}\b", end) for name in sums):
        return "average" if "/" in end else "sum"
    if PRINTS_NR.search(end):
        return "lines"
    tallies = {a or b for _, action in body for a, b in TALLY.findall(action)}
    if any(re.search(rf"\bprintf?\b[^;}}]*\b{name}\b", end) for name in tallies):
        return "matches" if any(selects(p) for p, _ in body) else "lines"
    return ""


def awk_role(code: str) -> str:
    """Return ``distinct`` when ``code`` keeps the first line of each value
    (``!seen[$1]++``), ``select`` when it keeps the lines a pattern selects,
    else ""."""
    patterns = [pattern for pattern, _ in awk_rules(code)]
    if any(SEEN.search(pattern) for pattern in patterns):
        return "distinct"
    return "select" if any(selects(pattern) for pattern in patterns) else ""


def awk_patterns(code: str) -> list[str]:
    """Return the ``/re/`` of ``code`` and the strings it compares to."""
    compared = [a or b for a, b in COMPARED.findall(code)]
    return [*REGEX.findall(code), *compared]


def awk_tests_a_field(code: str) -> bool:
    """Return True when ``code`` compares one field (``$2 == "ERROR"``)."""
    return FIELD_TEST.search(code) is not None


def selects(pattern: str) -> bool:
    """Return True when a rule's pattern selects lines by what they hold."""
    stripped = pattern.strip()
    return (
        bool(stripped)
        and stripped not in ("BEGIN", "END")
        and (ROW_NUMBER.fullmatch(pattern) is None)
    )


def awk_rules(code: str) -> list[tuple[str, str]]:
    """Split awk ``code`` into ``(pattern, action)`` rules, braces in strings
    aside; a pattern with no action has the action ""."""
    rules: list[tuple[str, str]] = []
    pattern: list[str] = []
    depth, start, quoted = 0, 0, False
    for at, char in enumerate(code):
        if char == '"' and code[at - 1 : at] != "\\":
            quoted = not quoted
        if char == "{" and not quoted:
            start = at + 1 if depth == 0 else start
            depth += 1
        elif char == "}" and not quoted and depth:
            depth -= 1
            if depth == 0:
                rules.append(("".join(pattern), code[start:at]))
                pattern = []
        elif depth == 0 and char in ";\n" and not quoted:
            if "".join(pattern).strip():
                rules.append(("".join(pattern), ""))
            pattern = []
        elif depth == 0:
            pattern.append(char)
    if "".join(pattern).strip():
        rules.append(("".join(pattern), ""))
    return rules
