"""A question that asks for a number is answered by one, checked before any accept.

"What is the total of the amount column?", "How many entries have the level
ERROR?" or "tell me the highest price in it" is answered only by a number. A
small executor sometimes reports what it did instead ("The 'amount' column is
the third column", "the file was read successfully", "the highest price is:
[the highest price value]"); a check that any tool output meets (the 0 an awk
over the wrong column printed, ``.*``) then matches it, and the run would accept
an answer that states no number at all. Before R4b accepts such a question, some
subtask's output must state a number; the evidence rule of R4a has already
judged every number a subtask states.

"What is max_connections in db/config.yaml?" asks for the value of a key. An
answer that states no value ("The config file was found.") met a check that
matches anything and was accepted. Before R4b accepts such a question, a tool
output must have shown the key (or a command naming it printed its value),
and some subtask's output must state a value shown there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from roles.claims.columns import EXTREME
from roles.claims.computed import NUMBER, is_count
from roles.claims.deletions import MAKES
from roles.claims.evidence import parse_evidence, split_exit_code
from roles.claims.facts import appears, output_text
from roles.claims.question_words import asks_for_aggregate
from roles.contracts import CriterionVerdict, SubTaskOutcome

__all__ = ["ANSWERED", "VALUE_ANSWERED", "asked_key", "asks_for_a_number", "unanswered"]

ANSWERED = "the answer states the number the question asks for"
VALUE_ANSWERED = "the answer states the value a tool output shows for the key asked"
# "What is max_connections in …", "what's the value of `db.port` in …": a key
# written as code, in quotes or with "_", "." or "-" inside the word.
ASKED_KEY = re.compile(
    r"\bwhat(?:\s+is|'s)\s+(?:the\s+(?:value|setting)\s+(?:of|for)\s+)?(?:the\s+)?"
    r"(?:[`'\"](?P<quoted>[\w.-]+)[`'\"]"
    r"|(?P<bare>[A-Za-z_][\w-]*[_.-][\w.-]*[A-Za-z0-9]))"
    r"(?:\s+(?:setting|option|key|value|field|entry))?\s+(?:in|of|from|for)\b",
    re.IGNORECASE,
)
# What follows a key on its line before the value: "key: 1", "key = 1", '"key": 1'.
_BETWEEN = " \t\"':="
_VALUE = re.compile(r"[^\s,;#\"'}\]]+")
SHOWN_LIMIT = 3
# A question, not a request to make something that prints a total.
QUESTION = re.compile(
    r"\?\s*$|^\s*(?:how many|what(?: is|'s)|count|sum|compute|calculate)\b"
    r"|\btell me\b",
    re.IGNORECASE | re.MULTILINE,
)
# The highest or lowest of a quantity is a number ("the highest price"); the
# largest file or the most active user is a name.
EXTREME_QUANTITY = re.compile(
    rf"(?:{EXTREME.pattern})\s+(?:\w+\s+)?"
    r"(?:price|cost|value|amount|total|score|salary|quantity|rate|temperature)s?\b",
    re.IGNORECASE,
)


def asks_for_a_number(request: str) -> bool:
    """Return True when ``request`` is a question whose answer is a count, a
    total, an average or the highest (lowest) of a quantity (and not a request to
    make a file or a script)."""
    text = request or ""
    return (
        (asks_for_aggregate(text) or EXTREME_QUANTITY.search(text) is not None)
        and QUESTION.search(text) is not None
        and MAKES.search(text) is None
    )


def asked_key(request: str) -> str:
    """Return the key whose value ``request`` asks for, written as code
    ("What is max_connections in db/config.yaml?"), else ""."""
    found = ASKED_KEY.search(request or "")
    return (found["quoted"] or found["bare"]) if found else ""


def unanswered(
    request: str, outcomes: Sequence[SubTaskOutcome]
) -> list[CriterionVerdict]:
    """Return a failing verdict when ``request`` asks for a number and no
    subtask's output states one, or for a key's value that no subtask's output
    states as a tool output showed it; else []."""
    return _no_number(request, outcomes) or _no_value(request, outcomes)


def _no_number(
    request: str, outcomes: Sequence[SubTaskOutcome]
) -> list[CriterionVerdict]:
    if not asks_for_a_number(request):
        return []
    outputs = [output_text(o.output) for o in outcomes]
    if any(NUMBER.search(text) for text in outputs):
        return []
    said = " / ".join(t.strip()[:120] for t in outputs if t.strip()) or "(nothing)"
    return [
        CriterionVerdict(
            criterion=ANSWERED,
            mode="verifiable",
            verdict="fail",
            failure_class="logical",
            evidence=(
                "the request asks for a count or a total, and no subtask's output "
                f"states a number (they said: {said}); the answer is the number a "
                "command computes: run it and state what it printed"
            ),
        )
    ]


def _no_value(
    request: str, outcomes: Sequence[SubTaskOutcome]
) -> list[CriterionVerdict]:
    key = asked_key(request)
    if not key:
        return []
    calls = [c for o in outcomes for c in (*o.earlier_calls, *o.tool_calls)]
    shown = shown_values(key, calls)
    answer = "\n".join(output_text(o.output) for o in outcomes)
    if any(appears(value, answer) for value in shown):
        return []
    said = answer.strip()[:120] or "(nothing)"
    if shown:
        where = f"a tool output shows {key} with {', '.join(shown[:SHOWN_LIMIT])}"
    else:
        where = f"no tool output shows {key}: read the file that holds it"
    return [
        CriterionVerdict(
            criterion=VALUE_ANSWERED,
            mode="verifiable",
            verdict="fail",
            failure_class="logical",
            evidence=(
                f"the request asks for the value of {key}, and the answer states "
                f"none that a tool showed (it said: {said}); {where}, and state "
                "the value"
            ),
        )
    ]


def shown_values(key: str, tool_calls: Sequence[str]) -> list[str]:
    """Return the values successful tool calls showed for ``key``: what follows
    it on an output line ("max_connections: 140" shows 140), and each line a
    call that names the key printed alone (``awk '/max_connections/{print $2}'``)."""
    values: list[str] = []
    for entry in tool_calls:
        call = parse_evidence(entry)
        if call is None or call.output.lstrip().startswith(("ERROR:", "[LAW1]")):
            continue
        code, body = split_exit_code(call.output)
        if code not in (None, 0):
            continue
        said = json.dumps(call.args, ensure_ascii=False)
        # A count is not a value: "grep -c max_connections f" prints 1.
        named = key in said and not is_count(str(call.args.get("command") or ""))
        for line in body.splitlines():
            at = _key_at(key, line)
            if at >= 0:
                value = _VALUE.match(line[at + len(key) :].lstrip(_BETWEEN))
                values.extend([value.group()] if value else [])
            elif named and line.strip() and len(line.split()) == 1:
                values.append(line.strip())
    return list(dict.fromkeys(values))


def _key_at(key: str, line: str) -> int:
    found = re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w.-])", line)
    return found.start() if found else -1
