r"""Checks that guess the answer: a number the planner could not know, made a
number a tool must show.

Asked "what is the total of the amount column?", a small planner writes the
check ``output_matches`` "total amount: 123456": the answer it hopes for, in a
format of its own. The total is what the executor is there to compute, so the
planner cannot know it; read as written the check fails every right answer
("13467"), and GGS then reads a logical failure and blocks the program that
printed the right total. Under a question whose answer is a number
(``roles.claims.stated_values.asks_for_a_number``), an output check that holds
a number the request does not state is such a guess: ``replace_guessed_numbers`` makes
it the
bare-number check, met when the claim states one number and a tool output shows
it (``roles.claims.number_pattern``). The evidence rules of R4a still judge the number
itself (a total or count must be one a tool computed). Asked for a key's value
("what is max_connections in db/config.yaml?"), a check "max_connections: 100"
guesses it the same way: it becomes /max_connections:\ [0-9]+/, and R4b still
wants the value a tool output shows for the key
(``roles.claims.stated_values``). A number of the request ("the 3rd column", "more than
100") is kept, and so is regex syntax
(``\d{1,3}``, ``[0-9]``): only digits that stand for themselves are read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from roles.claims.question import Question, read_question
from roles.claims.stated_values import asked_key, asks_for_a_number
from roles.contracts import Criterion, CriterionSpec, SubTask, normalise_criterion

BARE = Criterion(
    criterion="the answer states a number a tool output shows",
    check={"type": "output_matches", "pattern": r"^[0-9]+$"},
)
DIGITS = re.compile(r"\d+")
WORDS = re.compile(r"[^\W\d_]{3,}")
# The answers whose words a planner cannot know before a tool shows them.
GUESSABLE = ("name", "names", "path", "yes_no")
# Regex syntax whose digits do not stand for themselves: an escape (\d, \1), a
# repeat ({2}, {1,3}) and a character class ([0-9]).
_SYNTAX = re.compile(r"\\.|\{\d*,?\d*\}|\[(?:\\.|[^\]])*\]")
# Regex syntax whole, or digits that stand for a number.
_LITERAL = re.compile(rf"{_SYNTAX.pattern}|(?P<n>\d+)")


def replace_guessed_numbers(
    subtasks: Sequence[SubTask], request: str, question: Question | None = None
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks with each check that guesses the answer replaced, and
    a note for each.

    Under a number asked for, a check holding a number the request does not
    state becomes the bare-number check (under a key's value, the same check
    with any number in the guessed one's place). Under a name, names, a path or
    a yes/no asked for, an output check holding a word the request, the step's
    intent and its context do not state is dropped: the form of such an answer
    is checked in code (``roles.claims.answer_rules``).
    """
    question = question or read_question(request)
    number = question.numeric or asks_for_a_number(request)
    key = asked_key(request)
    words = question.answer in GUESSABLE and not (number or key)
    if not (number or words or key):
        return list(subtasks), []
    stated = set(DIGITS.findall(request))
    shaped, notes = [], []
    for sub in subtasks:
        criteria: list[CriterionSpec] = []
        known = f"{request}\n{sub.intent}\n{sub.context}".lower()
        for value in sub.success_criteria:
            guessed = guessed_numbers(value, stated) if not words else []
            if words and not number:
                unstated = guessed_words(value, known)
                if unstated:
                    notes.append(
                        f"{sub.intent}: {normalise_criterion(value).criterion!r} "
                        f"guessed the answer ({', '.join(unstated)}, words the "
                        "request does not state); it was dropped"
                    )
                    continue
            if not guessed:
                criteria.append(value)
                continue
            made = BARE if number else any_number(value, set(guessed))
            if made not in criteria:
                criteria.append(made)
            notes.append(
                f"{sub.intent}: {normalise_criterion(value).criterion!r} guessed "
                f"the answer ({', '.join(guessed)}, a number the request does not "
                f"state); it became: {made.criterion}"
            )
        shaped.append(sub.model_copy(update={"success_criteria": criteria}))
    return shaped, notes


def any_number(value: CriterionSpec, guessed: set[str]) -> Criterion:
    """Return the output check ``value`` with any number where it guessed one
    ("max_connections: 100" → /max_connections:\\ [0-9]+/)."""
    check = normalise_criterion(value).check or {}
    if check.get("type") == "output_matches":
        pattern = _LITERAL.sub(
            lambda m: "[0-9]+" if m.group("n") in guessed else m.group(0),
            check["pattern"],
        )
    else:
        pattern = DIGITS.sub(
            lambda m: "[0-9]+" if m.group(0) in guessed else m.group(0),
            re.escape(str(check.get("value"))),
        )
    return Criterion(
        criterion=f"the output matches /{pattern}/, any number where the plan "
        "guessed one",
        check={"type": "output_matches", "pattern": pattern},
    )


def guessed_words(value: CriterionSpec, known: str) -> list[str]:
    """Return the words (of 3 letters or more) an output check demands that
    ``known`` (lower-cased) does not hold."""
    literal = _literal(value)
    return [w for w in dict.fromkeys(WORDS.findall(literal)) if w.lower() not in known]


def guessed_numbers(value: CriterionSpec, stated: set[str]) -> list[str]:
    """Return the numbers an output check demands that ``stated`` lacks."""
    literal = _literal(value)
    return [n for n in dict.fromkeys(DIGITS.findall(literal)) if n not in stated]


def _literal(value: CriterionSpec) -> str:
    """Return the text an output check demands, regex syntax left out."""
    check = normalise_criterion(value).check or {}
    kind = check.get("type")
    if kind == "output_matches":
        text = check.get("pattern")
        literal = _SYNTAX.sub(" ", text) if isinstance(text, str) else ""
    elif kind == "output_contains":
        literal = check.get("value")
        if isinstance(literal, int | float) and not isinstance(literal, bool):
            literal = str(literal)
    else:
        return ""
    return literal if isinstance(literal, str) else ""
