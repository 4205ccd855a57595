"""R4a's rules of evidence: what a claim states that no tool showed or computed.

The rows of ``EVIDENCE_RULES`` run in order over a ``Case``
(``roles.claims.engine``); the first that fails names itself on the verdict.
A claim that states a number or a path no tool output shows is not evidence;
for a question that asks for a total or count (the ``Question``'s answer), the
number must also be one a tool computed (``roles.claims.computed``), by a command
that looks for what was asked. A reason names the command that computes it when
the question and what the attempt read make it plain::

    invented_facts(subtask, result, "How many lines does /srv/a.log have?")
    # "the claimed output states '412' as a total or count, but no tool
    #  computed it: …; call the shell tool with the command wc -l /srv/a.log …"
"""

from __future__ import annotations

import re
import shlex

from roles.claims.columns import column_count_command, column_extreme_command
from roles.claims.command import parse_command
from roles.claims.command_queries import command_counts
from roles.claims.computed import (
    column_total_command,
    computed,
    computing_error,
    counts_other_lines,
    empty_sum,
    is_number,
    line_count_command,
    only_counted,
    printers,
    shows_nothing,
    states_a_result,
    word_count_command,
)
from roles.claims.engine import Case, Finding, Rule, decide
from roles.claims.facts import FACT, appears, unshown_facts
from roles.claims.field_values import field_value, miscounted
from roles.claims.name_patterns import loose_count_reason, loose_extension_count
from roles.claims.question import Question, question_for
from roles.claims.quoted_fields import split_quoted
from roles.claims.script_runs import unrun_script
from roles.claims.unterminated import uncounted_last_line
from roles.contracts import ExecutionResult
from roles.tools import head_tail

__all__ = [
    "COMPUTE",
    "EVIDENCE_RULES",
    "NO_EVIDENCE",
    "evidence_finding",
    "invented_facts",
]

NO_EVIDENCE = "the executor's claimed output is not evidence"
COMPUTE = "run a command that prints it (wc -l, grep -c, awk)"
QUOTE = 300
# A planner's enumeration ("Step 1: read the file", "2) count") states no fact:
# its numbers do not make a claimed count of 1 or 2 known.
LABEL = re.compile(
    r"\b(?:step|part|stage|phase)\s+\d+\b|^\s*\(?\d+[.)](?=\s)", re.I | re.M
)


def invented_facts(
    subtask,
    result: ExecutionResult,
    request: str = "",
    question: Question | None = None,
) -> str:
    """Return why the claim is not evidence (the reason of the first rule of
    ``EVIDENCE_RULES`` it fails), else ""."""
    finding = evidence_finding(subtask, result, request, question)
    return finding.reason if finding else ""


def evidence_finding(
    subtask,
    result: ExecutionResult,
    request: str = "",
    question: Question | None = None,
) -> Finding | None:
    """Return the first evidence rule the attempt fails, with its name, or None."""
    if result.status == "failed":
        return None
    case = Case(subtask, result, question_for(question, request), request)
    return decide(case, EVIDENCE_RULES)


def _known(case: Case) -> str:
    subtask = case.subtask
    return LABEL.sub(" ", f"{subtask.intent}\n{subtask.context}\n{case.request}")


def _numbers(case: Case) -> list[str]:
    return [f for f in dict.fromkeys(FACT.findall(case.claim)) if is_number(f)]


def _totals(case: Case) -> bool:
    return case.asks("count", "total")


def _states_total(case: Case) -> bool:
    return _totals(case) and states_a_result(case.claim)


def script_not_run(case: Case) -> str:
    """A script the subtask was to run and the attempt only wrote or read."""
    unrun = unrun_script(case.subtask.intent, case.calls)
    return f"{unrun}; {NO_EVIDENCE}" if unrun else ""


def unshown(case: Case) -> str:
    """A number or path the claim states that no tool output shows."""
    facts = unshown_facts(case.result, _known(case))
    if not facts:
        return ""
    named = ", ".join(repr(f) for f in facts[:5])
    shown = "which no tool output shows"
    asked = case.request or case.subtask.intent
    extreme = column_extreme_command(asked, case.calls)
    if _totals(case) and any(is_number(f) for f in facts):
        shown += f"; {_compute(case)}"
    elif extreme and any(is_number(f) for f in facts):
        shown += f"; call the shell tool with the command {extreme} and answer "
        shown += "with its number"
    return f"the claimed output states {named}, {shown}; {NO_EVIDENCE}"


def unshown_extreme(case: Case) -> str:
    """A claimed highest (lowest) value of a CSV column no command printed."""
    command = column_extreme_command(case.request or case.subtask.intent, case.calls)
    if not (command and states_a_result(case.claim)):
        return ""
    numbers = _numbers(case)
    shown = any(c and not e for f in numbers for c, e in printers(f, case.calls))
    if not numbers or shown:
        return ""
    return (
        f"the claimed {numbers[0]} is one of the values the file holds, which does "
        "not show that it is the highest or lowest of them: call the shell tool "
        f"with the command {command} and answer with its number; {NO_EVIDENCE}"
    )


def zero_sum(case: Case) -> str:
    """A sum of 0: what a sum tool prints for a text or missing field."""
    if not (_states_total(case) and case.asks("total") and empty_sum(case.claim)):
        return ""
    return (
        "the claimed sum is 0: a sum tool prints 0 for a field that holds text "
        "or does not exist; print the header (head -1) to find the column's "
        "number, then sum that column"
    )


def count_for_sum(case: Case) -> str:
    """A sum answered with a number a line or match counter printed."""
    numbers = _numbers(case)
    if not (_states_total(case) and case.asks("total") and numbers):
        return ""
    if not all(only_counted(f, case.calls) for f in numbers):
        return ""
    return (
        f"the claimed {numbers[0]} was printed by a command that counts lines "
        "or matches (wc, grep -c), and a count is not a sum or an average: "
        "print the header (head -1) to find the column's number, then sum "
        "that column (awk -F, 'NR>1{s+=$N} END{print s}' FILE)"
    )


def _word(case: Case) -> str:
    for q in (case.question, case.asked):
        if q.answer == "count" and q.matching:
            return q.matching
    return ""


# What a count of each kind may be computed by (``command_counts``'s kinds).
COUNTED_BY = {
    "distinct": ("distinct",),
    "files": ("files",),
    "matches": ("matches",),
    "words": ("words",),
}


def counts_other_kind(case: Case) -> str:
    """A count of one kind (distinct values, files, matching lines, words)
    answered with a number a command printed that counts another kind: every
    command that printed it counts something, and none counts what is asked."""
    kind = next(
        (q.count_of for q in (case.question, case.asked) if q.count_of in COUNTED_BY),
        "",
    )
    numbers = _numbers(case)
    if not (kind and _states_total(case) and numbers):
        return ""
    printed = [
        (value, command, command_counts(parse_command(command)))
        for value in numbers
        for command, error in printers(value, case.calls)
        if command and not error
    ]
    if not printed or any(k in COUNTED_BY[kind] or not k for _, _, k in printed):
        return ""
    value, command, counted = printed[0]
    said = f"the claimed {value} was printed by `{command}`, which"
    word = _word(case)
    if kind == "files" and counted == "lines":
        return (
            f"{said} counts the lines inside the files it names, not the files: "
            "list the files and count the list (find DIR -type f -name '*.py' | "
            f"wc -l); {NO_EVIDENCE}"
        )
    if kind == "matches" and word:
        return (
            f"{said} does not look for {word!r}: it counts every line, not the "
            f"lines that hold {word!r}; count only those (grep -c "
            f"{shlex.quote(word)} FILE); {NO_EVIDENCE}"
        )
    return (
        f"{said} counts {counted}, and the question asks for the number of "
        f"{ASKED_KIND[kind]}: count those ({COUNT_HOW[kind]}); {NO_EVIDENCE}"
    )


ASKED_KIND = {
    "distinct": "distinct values",
    "files": "files",
    "matches": "lines that match",
    "words": "words",
}
COUNT_HOW = {
    "distinct": "… | sort -u | wc -l",
    "files": "find DIR -type f -name PATTERN | wc -l",
    "matches": "grep -c PATTERN FILE",
    "words": "wc -w FILE",
}


def counter_ignores_word(case: Case) -> str:
    """A count of the lines holding a word, printed by a command that counts
    every line."""
    word, numbers, calls = _word(case), _numbers(case), case.calls
    if not (word and _states_total(case)):
        return ""
    wrong = [(f, c) for f in numbers if (c := counts_other_lines(f, word, calls))]
    right = any(
        computed(f, calls) and not counts_other_lines(f, word, calls) for f in numbers
    )
    if not wrong or right:
        return ""
    value, command = wrong[0]
    return (
        f"the claimed {value} was printed by `{command}`, which does not look "
        f"for {word!r}: it counts every line, not the lines that hold {word!r}; "
        f"count only those (grep -c {shlex.quote(word)} FILE); {NO_EVIDENCE}"
    )


def field_miscount(case: Case) -> str:
    """A count by a field's value taken from the wrong field or a split quote."""
    if not _states_total(case):
        return ""
    numbers, request = _numbers(case), case.request
    return miscounted(request, numbers, case.calls) or split_quoted(
        request, numbers, case.calls
    )


def last_line_missed(case: Case) -> str:
    """A line count by wc -l of a file whose last line has no newline."""
    if not _states_total(case):
        return ""
    short = uncounted_last_line(_numbers(case), case.calls)
    return f"{short}; {NO_EVIDENCE}" if short else ""


def loose_name_count(case: Case) -> str:
    """A count of files by an extension pattern that also matches other names."""
    numbers, calls = _numbers(case), case.calls
    if not (_states_total(case) and case.counts("files") and numbers):
        return ""
    loose = [(f, c) for f in numbers if (c := loose_extension_count(f, calls))]
    if len(loose) != len(numbers):
        return ""
    return f"{loose_count_reason(*loose[0])}; {NO_EVIDENCE}"


def _read(case: Case) -> list[str]:
    known = _known(case)
    return [
        f
        for f in _numbers(case)
        if not appears(f, known) and not computed(f, case.calls)
    ]


def counted_an_error(case: Case) -> str:
    """A number printed by a command that also reported an error."""
    if not _states_total(case):
        return ""
    read = _read(case)
    errors = [computing_error(f, case.calls) for f in read]
    if not (read and all(errors)):
        return ""
    return (
        f"the command that printed {read[0]!r} also reported an error "
        f"({_quote(errors[0])}), so it counted what is not there; fix the "
        f"command (write the path itself) and run it again; {NO_EVIDENCE}"
    )


def unlisted_zero(case: Case) -> str:
    """A count of 0 that no listing shows to be empty."""
    if not (_states_total(case) and case.asks("count") and empty_sum(case.claim)):
        return ""
    if shows_nothing(case.calls, case.counts("files")):
        return ""
    return (
        "the claimed count is 0, but no tool listing shows that nothing is "
        "there: a count of 0 often comes from looking in the wrong place (ls "
        "without the files in subdirectories, a pattern that matches nothing); "
        "list what is counted (find DIR -name '*.py', grep -rn WORD DIR), "
        f"then count that; {NO_EVIDENCE}"
    )


def read_not_computed(case: Case) -> str:
    """A total or count read among others from a file instead of computed."""
    if not _states_total(case):
        return ""
    read = _read(case)
    if not read:
        return ""
    named = ", ".join(repr(f) for f in read[:5])
    return (
        f"the claimed output states {named} as a total or count, but no tool computed "
        "it: a value read among others from a file or listing is data, not the "
        f"answer; {_compute(case)}; {NO_EVIDENCE}"
    )


def _compute(case: Case) -> str:
    """Return how to compute the stated value: the command itself when the
    request (or the subtask's intent) and what the attempt read make it plain."""
    calls = case.calls
    # A count by a field's value ("have the level ERROR") is not one by a word.
    by_word = not field_value(case.request)[1]
    command = next(
        (
            found
            for text in (case.request, case.subtask.intent)
            for found in (
                line_count_command(text, calls),
                column_total_command(text, calls),
                column_count_command(text, calls),
                word_count_command(text, calls) if by_word else "",
            )
            if found
        ),
        "",
    )
    if command:
        return (
            f"call the shell tool with the command {command} and answer with its number"
        )
    return COMPUTE


def _quote(text: str) -> str:
    return head_tail(text.strip(), QUOTE)


EVIDENCE_RULES: tuple[Rule, ...] = (
    Rule("script-not-run", script_not_run),
    Rule("unshown-fact", unshown),
    Rule("unshown-extreme", unshown_extreme),
    Rule("zero-sum", zero_sum),
    Rule("count-for-sum", count_for_sum),
    Rule("counts-other-kind", counts_other_kind),
    Rule("counter-ignores-word", counter_ignores_word),
    Rule("field-miscount", field_miscount),
    Rule("last-line-missed", last_line_missed),
    Rule("loose-name-count", loose_name_count),
    Rule("counted-an-error", counted_an_error),
    Rule("unlisted-zero", unlisted_zero),
    Rule("read-not-computed", read_not_computed),
)
