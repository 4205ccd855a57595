r"""The criteria a plan may keep: only what the request states; the form is code's.

A planner cannot know the answer it plans for, so every value an output check
demands that the request does not state is a guess: ``/200 1/`` for a question
whose answer it has not seen, ``/total amount: 123456/``, ``/debug logging
turned on/``, ten checks counting ``0`` … ``9``, ``^\d+ lines$`` beside
``^\d+$``. Read as written, each fails the right answer, and GGS then blocks the
program that printed it. So, by one rule rather than one repair per shape:

- Under a question whose answer has a form code can check (a number, a count,
  a total, a path, a name or names, yes or no, a key's value: the
  ``Question``), the form is code's: an output check (``output_contains``,
  ``output_matches``, ``json_field``) is kept only when what it demands is in
  a quoted part of the request (an output format the user asked for), and the
  plan's free-text criteria are left out (the facts are judged by the evidence
  rules, the form by the check ``answer_form`` added to the last step).
- Under any other question, an output check is kept only when every word and
  number it demands is stated in the request; a check that demands none (``.*``,
  ``\d+``) states nothing and is left out.
- ``file_exists`` is kept only for a file the request names, under a request
  for an effect or for free text: a file a question only reads exists already.
- A free-text criterion that quotes text the request states is that text's
  check, made by code (``output_contains``), not a judgement for the model.
- A free-text criterion whose words come from what memory recalled, not from
  the request ("The merged output meets all the task criteria."), is left
  out: criteria come from the request only.

``exit_code`` checks and the remaining free-text criteria are kept as written.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from roles.claims.question import Question
from roles.contracts import Criterion, CriterionSpec, SubTask, normalise_criterion
from roles.criteria import FORM_CHECK

# A word of a criterion, for where it comes from: the request or memory.
_WORD = re.compile(r"[^\W\d_]{4,}")
__all__ = ["DETERMINATE", "form_criterion", "is_form_check", "keep_stated"]

# The answers whose form code checks (roles.claims.answer_rules).
DETERMINATE = ("number", "count", "total", "path", "name", "names", "yes_no", "value")
OUTPUT_CHECKS = ("output_contains", "output_matches", "json_field")
# Short: a small executor copies a long criterion as its answer.
FORMS = {
    "number": "states the number asked for",
    "count": "states the count asked for as a number",
    "total": "states the total asked for as a number",
    "path": "names the path asked for",
    "name": "names what is asked for",
    "names": "names what is asked for",
    "yes_no": "says yes or no",
    "value": "states the value asked for",
}
# Regex syntax whose letters and digits do not stand for themselves: an escape
# (\d, \s, \1), a repeat ({2}, {1,3}), a character class ([0-9], [a-z]) and a
# group's flags ((?i), (?:, (?P<name>).
_SYNTAX = re.compile(r"\\.|\{\d*,?\d*\}|\[(?:\\.|[^\]])*\]|\(\?(?:P<\w+>|[\w:=!<]*)")
_TOKEN = re.compile(r"[^\W\d_]{3,}|\d+")
# A quote opens and closes beside no letter: "the user's file" quotes nothing.
_QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)|\"([^\"]+)\"|`([^`]+)`|“([^”]+)”")


def form_criterion(question: Question) -> Criterion:
    """Return the criterion that the answer is in the form ``question`` asks."""
    return Criterion(
        criterion=f"the answer {FORMS.get(question.answer, 'answers the request')}",
        check={"type": FORM_CHECK},
    )


def keep_stated(
    subtasks: Sequence[SubTask], request: str, question: Question, recalled: str = ""
) -> tuple[list[SubTask], list[str]]:
    """Return the subtasks with only the criteria the request states, the form
    check on the last step under a determinate question, and a note per drop
    (``recalled``: the memory text the planner was given)."""
    determinate = question.answer in DETERMINATE
    last = max((s.sequence for s in subtasks), default=1)
    shaped, notes = [], []
    for sub in subtasks:
        kept: list[CriterionSpec] = []
        for value in sub.success_criteria:
            made, why = _stated(value, request, question, recalled)
            if made is None:
                text = normalise_criterion(value).criterion
                notes.append(f"{sub.intent}: {text!r} was left out: {why}")
            elif made not in kept:
                kept.append(made)
        if determinate and sub.sequence == last:
            kept = [c for c in kept if not is_form_check(c)] + [
                form_criterion(question)
            ]
        shaped.append(sub.model_copy(update={"success_criteria": kept}))
    return shaped, notes


def _stated(
    value: CriterionSpec, request: str, question: Question, recalled: str = ""
) -> tuple[CriterionSpec | None, str]:
    """Return the criterion as it may run (None: left out) and why it was not."""
    criterion = normalise_criterion(value)
    check = criterion.check or {}
    kind = check.get("type")
    determinate = question.answer in DETERMINATE
    if kind in OUTPUT_CHECKS:
        demanded = demanded_tokens(check)
        where = quoted_text(request) if determinate else request
        if not demanded:
            return None, "it demands no word or number the request states"
        unstated = [t for t in demanded if t.lower() not in where.lower()]
        if unstated:
            said = "a quoted part of the request" if determinate else "the request"
            return (
                None,
                f"it demands {', '.join(unstated[:5])}, which {said} does not state",
            )
        return value, ""
    if kind == "file_exists":
        path = str(check.get("path") or "")
        named = bool(path) and posixpath.basename(path.rstrip("/")) in request
        if determinate or question.answer not in ("effect", "text") or not named:
            return None, "the request does not ask for that file to be made"
        return value, ""
    if kind is None:
        if determinate:
            return None, "the form of the answer is checked in code"
        if _recalled(criterion.criterion, request, recalled):
            return None, "its words are memory's, not the request's"
        quoted = [q for q in _quotes(criterion.criterion) if q in request]
        if quoted:
            check = {"type": "output_contains", "value": quoted[0]}
            return Criterion(
                criterion=criterion.criterion, mode=criterion.mode, check=check
            ), ""
    return value, ""


def _recalled(text: str, request: str, recalled: str) -> bool:
    """True when most words of a criterion (4 letters or more) are in what
    memory recalled and few are in the request."""
    words = {w.lower() for w in _WORD.findall(text)}
    if not (recalled and len(words) >= 3):
        return False
    memory = {w.lower() for w in _WORD.findall(recalled)}
    asked = {w.lower() for w in _WORD.findall(request)}
    return len(words & memory) >= 0.6 * len(words) > len(words & asked) * 1.2


def demanded_tokens(check: dict) -> list[str]:
    """Return the words (3 letters or more) and numbers an output check demands,
    regex syntax left out."""
    kind = check.get("type")
    if kind == "output_matches":
        text = check.get("pattern")
        text = _SYNTAX.sub(" ", text) if isinstance(text, str) else ""
    elif kind == "json_field":
        text = check.get("value")
    else:
        text = check.get("value")
    if isinstance(text, bool) or text is None:
        return []
    return list(dict.fromkeys(_TOKEN.findall(str(text))))


def quoted_text(request: str) -> str:
    """Return the request's quoted parts, joined (the output formats it states)."""
    return "\n".join(_quotes(request))


def _quotes(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


def is_form_check(value: CriterionSpec) -> bool:
    """Return True when ``value`` is the check of the answer's form."""
    check = normalise_criterion(value).check or {}
    return check.get("type") == FORM_CHECK
