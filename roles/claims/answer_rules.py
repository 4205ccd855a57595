"""R4b's rules of the answer: what the whole run must show for the Question.

Before the merged result is verified, code checks that it answers what was
asked, in the form the ``Question`` names, whatever criteria R2 wrote: a count
or total states a number, a request for names states a name a tool output
shows (a line count is not a list of users), a path states one, a yes/no
question says which, and a request for an effect on named files is met only
when a tool call changed them and the filesystem shows it. Each row of
``ANSWER_RULES`` is named; its verdict carries the name.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from roles.claims.evidence import (
    ToolCall,
    is_failed_call,
    parse_evidence,
    split_exit_code,
)
from roles.claims.facts import output_text
from roles.claims.question import Question, read_question
from roles.claims.stated_values import ANSWERED
from roles.claims.writes import may_write, written
from roles.contracts import (
    CriterionVerdict,
    ExecutionResult,
    SubTask,
    SubTaskOutcome,
)

__all__ = [
    "ANSWER_RULES",
    "FORM_RULES",
    "Answer",
    "answer_form",
    "edit_shown",
    "unanswered_question",
    "subtask_effect",
    "unmade_effect",
]

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?![\w])")
NAMEISH = re.compile(r"[\w@+-]*[A-Za-z][\w.@+-]*")
ABSOLUTE_PATH = re.compile(r"(?<![\w.])(?:/[\w.@+-]+)+/?")
PATHISH = re.compile(r"(?:/[\w.@+-]+)+/?|[\w@+-]+\.[A-Za-z0-9]{1,8}\b")
YES_NO = re.compile(
    r"\b(?:yes|no|true|false|enabled|disabled|not|none|is|are|oui|non|ja|nein|"
    r"sí|si|是|否)\b",
    re.IGNORECASE,
)
SAID = 160


@dataclass
class Answer:
    """The answer to judge: the question, the request, what was said and the
    evidence entries behind it (a run's outcomes, or one attempt's result)."""

    question: Question
    request: str
    said: Sequence[str]
    entries: Sequence[str]

    @classmethod
    def of_outcomes(
        cls, question: Question, request: str, outcomes: Sequence[SubTaskOutcome]
    ) -> Answer:
        """Return the run's answer: every outcome's output and every attempt's
        calls (what an earlier attempt changed stays changed)."""
        return cls(
            question,
            request,
            [output_text(o.output) for o in outcomes],
            [c for o in outcomes for c in (*o.earlier_calls, *o.tool_calls)],
        )

    @cached_property
    def text(self) -> str:
        return "\n".join(self.said).strip()

    @cached_property
    def calls(self) -> list[ToolCall]:
        return [c for c in map(parse_evidence, self.entries) if c is not None]

    @cached_property
    def shown(self) -> str:
        """What successful tool calls printed, less the words each was given
        that it printed back ("no files matched pattern **/x.py" shows no
        x.py: the call was told it)."""
        return "\n".join(_unechoed(c) for c in self.calls if not is_failed_call(c))


def _unechoed(call: ToolCall) -> str:
    text = split_exit_code(call.output)[1]
    given = [v.strip() for v in call.args.values() if isinstance(v, str)]
    for value in sorted(given, key=len, reverse=True):
        if len(value) >= 3:
            # Whole only: a root the output's paths start with stays.
            echo = rf"(?<![\w/.-]){re.escape(value)}(?![\w/.-])"
            text = re.sub(echo, " ", text)
    return text


def number_stated(answer: Answer) -> str:
    """A count, total or number is asked and the answer states none."""
    # A path's digits (/srv/2026-12-04/app.log) are no number stated.
    if not answer.question.numeric or NUMBER.search(
        ABSOLUTE_PATH.sub(" ", answer.text)
    ):
        return ""
    asked = answer.question.answer
    return f"the request asks for a {asked}, and no subtask's output states a number"


def names_stated(answer: Answer) -> str:
    """Names are asked and the answer states none that a tool output shows."""
    if answer.question.answer not in ("name", "names"):
        return ""
    asked = answer.request.lower()
    names = [
        w
        for w in dict.fromkeys(NAMEISH.findall(answer.text))
        if w.lower() not in asked and _shown(w, answer.shown)
    ]
    if names:
        return ""
    asked = "a name" if answer.question.answer == "name" else "names"
    return (
        f"the request asks for {asked}, "
        "and the answer states none that a tool output shows (a count or a "
        "number is not a name): answer with the names the tool printed"
    )


def path_stated(answer: Answer) -> str:
    """A path is asked and the answer names none that exists or a tool showed."""
    if answer.question.answer != "path":
        return ""
    # The request's own paths, and the directories above them, are where to
    # look: restated, they answer nothing.
    places = ABSOLUTE_PATH.findall(answer.request)
    asked = {posixpath.normpath(a) for p in places for a in _ancestors(p)}
    for found in PATHISH.findall(answer.text):
        if found.startswith("/") and posixpath.normpath(found) in asked:
            continue
        if _shown(found, answer.shown) or (found.startswith("/") and _exists(found)):
            return ""
    # An entry's own name (the "beta" of "which directory in /srv/projects …")
    # is its path in the directory the request names, once a tool showed it.
    for word in NAMEISH.findall(answer.text):
        shown = _shown(word, answer.shown)
        if shown and any(_exists(posixpath.join(p, word)) for p in places):
            return ""
    return (
        "the request asks for a file or path, and the answer names none that a "
        "tool output shows: answer with the path the tool printed"
    )


def path_of_other_kind(answer: Answer) -> str:
    """A directory is asked and every path the answer states is a file on
    disk, or a file is asked and every one is a directory (the request's own
    paths and the directories above them aside)."""
    asked = answer.question.path_kind
    if not asked or answer.question.answer not in ("path", "name", "names"):
        return ""
    places = ABSOLUTE_PATH.findall(answer.request)
    own = {posixpath.normpath(a) for p in places for a in _ancestors(p)}
    stated = [
        posixpath.normpath(found)
        for found in ABSOLUTE_PATH.findall(answer.text)
        if posixpath.normpath(found) not in own and _exists(found)
    ]
    kinds = {_kind(path) for path in stated}
    other = "file" if asked == "directory" else "directory"
    if not stated or kinds != {other}:
        return ""
    return (
        f"the request asks for a {asked}, and {stated[0]} is a {other}: answer "
        f"with the {asked} the tool output shows"
    )


def _kind(path: str) -> str:
    if os.path.isdir(path):
        return "directory"
    return "file" if os.path.isfile(path) else ""


def yes_or_no(answer: Answer) -> str:
    """A yes/no question whose answer says neither."""
    if answer.question.answer != "yes_no" or YES_NO.search(answer.text):
        return ""
    return "the request asks a yes/no question, and the answer says neither"


def effect_shown(answer: Answer) -> str:
    """A request to make or change named files that no tool call did."""
    return unmade_effect(answer.question, answer.calls)


def unmade_effect(question: Question, calls: Sequence[ToolCall]) -> str:
    """Return why ``calls`` do not show the effect ``question`` asks for on its
    named paths (no successful call wrote there, or a file to write is not
    there), or, when it names none, anywhere (every successful call only
    read), else ""; a deletion is ``roles.claims.deletions``'s."""
    if question.answer != "effect" or question.effect in ("", "delete"):
        return ""
    named = [p.rstrip("/") or "/" for p in question.paths]
    if not named:
        if any(may_write(call) for call in calls):
            return ""
        return (
            f"the request asks to {question.effect} something, and every "
            "successful tool call only read: make the change itself (write_file, "
            "apply_edit, or a command that writes the file), not only a report of it"
        )
    touched = [p for p in written(calls) if any(_within(p, n) for n in named)]
    if not touched:
        return (
            f"the request asks to {question.effect} {', '.join(named)}, and no "
            "successful tool call wrote there: make the change itself (write_file, "
            "or a command that writes the file), not only a report of it"
        )
    if question.effect in ("write", "create"):
        missing = [p for p in touched if p in named and not _exists(p)]
        if missing and len(missing) == len(touched):
            return (
                f"the request asks to {question.effect} {missing[0]}, and it does "
                "not exist"
            )
    return ""


def _ancestors(path: str) -> list[str]:
    """Return ``path`` and every directory above it ("/a/b" → /a/b, /a, /)."""
    parts = posixpath.normpath(path).split("/")
    return ["/".join(parts[:n]) or "/" for n in range(len(parts), 0, -1)]


def _within(path: str, named: str) -> bool:
    path = path.rstrip("/") or "/"
    return path == named or path.startswith(named + "/") or named.startswith(path + "/")


def _shown(word: str, shown: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", shown) is not None


def _exists(path: str) -> bool:
    return os.path.lexists(path)


@dataclass(frozen=True)
class AnswerRule:
    name: str
    check: Callable[[Answer], str]
    criterion: str


ANSWER_RULES: tuple[AnswerRule, ...] = (
    AnswerRule("effect-not-shown", effect_shown, "the requested change is made"),
    AnswerRule("number-not-stated", number_stated, ANSWERED),
    AnswerRule("names-not-stated", names_stated, "the answer states the names"),
    AnswerRule("path-not-stated", path_stated, "the answer states the path"),
    AnswerRule("path-of-other-kind", path_of_other_kind, "the answer states the path"),
    AnswerRule("yes-no-not-stated", yes_or_no, "the answer says yes or no"),
)


def unanswered_question(
    question: Question, request: str, outcomes: Sequence[SubTaskOutcome]
) -> list[CriterionVerdict]:
    """Return a failing verdict, named by its rule, for the first row of
    ``ANSWER_RULES`` the run's answer fails; else []."""
    answer = Answer.of_outcomes(question, request, outcomes)
    for rule in ANSWER_RULES:
        reason = rule.check(answer)
        if reason:
            return [
                CriterionVerdict(
                    criterion=rule.criterion,
                    mode="verifiable",
                    verdict="fail",
                    failure_class="logical",
                    evidence=f"{reason} (said: {answer.text[:SAID] or 'nothing'})",
                    rule=rule.name,
                )
            ]
    return []


# The rows of the answer's form alone: what one attempt's claim must meet.
FORM_RULES = tuple(r for r in ANSWER_RULES if r.name != "effect-not-shown")


def answer_form(
    question: Question, request: str, result: ExecutionResult
) -> tuple[str, str]:
    """Return the rule and reason when one attempt's claim is not in the form
    ``question`` asks (no number for a count, no name a tool showed …), else
    ("", "")."""
    answer = Answer(question, request, [output_text(result.output)], result.tool_calls)
    for rule in FORM_RULES:
        reason = rule.check(answer)
        if reason:
            return rule.name, reason
    return "", ""


# A value a change request states: a quoted text, or a number outside a path.
STATED_VALUE = re.compile(
    r"['\"`](?P<quoted>[^'\"`\n]{1,80})['\"`]|(?<![\w./:-])(?P<number>\d+(?:\.\d+)?)(?![\w/])"
)


def edit_shown(
    question: Question, intent: str, request: str, entries: Sequence[str]
) -> str:
    """Return the evidence that a change the request asks of a named file is
    made, else "": the subtask's intent names the file, the only successful
    writes to it are in-place edits (``apply_edit`` replaces one occurrence
    and keeps the rest; a whole-file write may drop lines, which only a
    reading can judge), and the file now holds every value the request
    states (the 9090 of "set the port in FILE to 9090"). A request that
    states no value is left to the reading."""
    if question.answer != "effect" or question.effect != "change":
        return ""
    named = [p for p in question.paths if p in intent]
    outside = ABSOLUTE_PATH.sub(" ", request)
    values = [m["quoted"] or m["number"] for m in STATED_VALUE.finditer(outside)]
    if len(named) != 1 or not values:
        return ""
    path = named[0]
    calls = [c for c in map(parse_evidence, entries) if c is not None]
    writes = [c for c in calls if not is_failed_call(c) and path in written([c])]
    if not writes or any(c.tool != "apply_edit" for c in writes):
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as held:
            body = held.read(1_000_000)
    except OSError:
        return ""
    if not all(re.search(rf"(?<![\w.]){re.escape(v)}(?![\w])", body) for v in values):
        return ""
    return (
        f"{len(writes)} in-place edit(s) changed {path}, and it now holds "
        f"{', '.join(repr(v) for v in values)}"
    )


def subtask_effect(
    subtask: SubTask, result: ExecutionResult, question: Question
) -> list[CriterionVerdict]:
    """Return a failing verdict when the subtask is the step that makes the
    effect the request asks for (its intent names one of the question's paths
    with an effect) and its calls do not show it; else []."""
    asked = read_question(subtask.intent)
    if asked.answer != "effect" or question.answer != "effect":
        return []
    shared = [p for p in question.paths if p in subtask.intent]
    if not shared:
        return []
    own = question.model_copy(update={"paths": shared})
    calls = [c for c in map(parse_evidence, result.tool_calls) if c is not None]
    reason = unmade_effect(own, calls)
    if not reason:
        return []
    return [
        CriterionVerdict(
            criterion=f"the change to {', '.join(shared)} is made",
            mode="verifiable",
            verdict="fail",
            failure_class="logical",
            evidence=reason,
            rule="effect-not-shown",
        )
    ]
