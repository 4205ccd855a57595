"""R4a's reading of a claim against its evidence: what it states that no tool
showed or computed.

A claim that states a number or a path no tool output shows is not evidence;
for a question that asks for a total or count, the number must also be one a
tool computed (``roles.aggregate``), by a command that looks for what was
asked. The reason names the command that computes it when the request and
what the attempt read make it plain::

    invented_facts(subtask, result, "How many lines does /srv/a.log have?")
    # "the claimed output states '412' as a total or count, but no tool
    #  computed it: …; call the shell tool with the command wc -l /srv/a.log …"
"""

from __future__ import annotations

import re
import shlex

from roles.aggregate import (
    asks_for_aggregate,
    asks_for_count,
    asks_for_file_count,
    asks_for_sum,
    column_total_command,
    computed,
    computing_error,
    counted_word,
    counts_lines_of_files,
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
from roles.columncount import column_count_command, column_extreme_command
from roles.contracts import ExecutionResult
from roles.csvsplit import split_quoted
from roles.facts import FACT, appears, output_text, unshown_facts
from roles.fieldcount import field_value, miscounted
from roles.lastline import uncounted_last_line
from roles.namecount import loose_count_reason, loose_extension_count
from roles.ranscript import unrun_script
from roles.tools import head_tail

__all__ = ["COMPUTE", "NO_EVIDENCE", "invented_facts"]

NO_EVIDENCE = "the executor's claimed output is not evidence"
COMPUTE = "run a command that prints it (wc -l, grep -c, awk)"
QUOTE = 300
# A planner's enumeration ("Step 1: read the file", "2) count") states no fact:
# its numbers do not make a claimed count of 1 or 2 known.
LABEL = re.compile(
    r"\b(?:step|part|stage|phase)\s+\d+\b|^\s*\(?\d+[.)](?=\s)", re.I | re.M
)


def invented_facts(subtask, result: ExecutionResult, request: str = "") -> str:
    """Return why the claim is not evidence when it states numbers or paths that
    no tool call showed (or, for a total, no tool computed), else ""."""
    if result.status == "failed":
        return ""
    unrun = unrun_script(subtask.intent, result.tool_calls)
    if unrun:
        return f"{unrun}; {NO_EVIDENCE}"
    known = LABEL.sub(" ", f"{subtask.intent}\n{subtask.context}\n{request}")
    facts = unshown_facts(result, known)
    aggregate = asks_for_aggregate(request, subtask.intent, subtask.context)
    if facts:
        named = ", ".join(repr(f) for f in facts[:5])
        shown = "which no tool output shows"
        extreme = column_extreme_command(request or subtask.intent, result.tool_calls)
        if aggregate and any(is_number(f) for f in facts):
            shown += f"; {_compute(request, subtask, result)}"
        elif extreme and any(is_number(f) for f in facts):
            shown += f"; call the shell tool with the command {extreme} and answer "
            shown += "with its number"
        return f"the claimed output states {named}, {shown}; {NO_EVIDENCE}"
    claim = output_text(result.output)
    extreme = _unshown_extreme(request or subtask.intent, claim, result.tool_calls)
    if extreme:
        return extreme
    if not (aggregate and states_a_result(claim)):
        return ""
    summed = asks_for_sum(request, subtask.intent, subtask.context)
    if empty_sum(claim) and summed:
        return (
            "the claimed sum is 0: a sum tool prints 0 for a field that holds text "
            "or does not exist; print the header (head -1) to find the column's "
            "number, then sum that column"
        )
    calls = result.tool_calls
    numbers = [f for f in dict.fromkeys(FACT.findall(claim)) if is_number(f)]
    if summed and numbers and all(only_counted(f, result.tool_calls) for f in numbers):
        return (
            f"the claimed {numbers[0]} was printed by a command that counts lines "
            "or matches (wc, grep -c), and a count is not a sum or an average: "
            "print the header (head -1) to find the column's number, then sum "
            "that column (awk -F, 'NR>1{s+=$N} END{print s}' FILE)"
        )
    word = counted_word(request)
    wrong = [(f, c) for f in numbers if (c := counts_other_lines(f, word, calls))]
    if (
        word
        and wrong
        and not any(
            computed(f, calls) and not counts_other_lines(f, word, calls)
            for f in numbers
        )
    ):
        value, command = wrong[0]
        return (
            f"the claimed {value} was printed by `{command}`, which does not look "
            f"for {word!r}: it counts every line, not the lines that hold {word!r}; "
            f"count only those (grep -c {shlex.quote(word)} FILE); {NO_EVIDENCE}"
        )
    miscomputed = miscounted(request, numbers, calls) or split_quoted(
        request, numbers, calls
    )
    if miscomputed:
        return miscomputed
    short = uncounted_last_line(numbers, calls)
    if short:
        return f"{short}; {NO_EVIDENCE}"
    files = asks_for_file_count(request, subtask.intent)
    loose = [(f, c) for f in numbers if (c := loose_extension_count(f, calls))]
    if files and numbers and len(loose) == len(numbers):
        return f"{loose_count_reason(*loose[0])}; {NO_EVIDENCE}"
    lengths = [(f, c) for f in numbers if (c := counts_lines_of_files(f, calls))]
    if files and numbers and len(lengths) == len(numbers):
        value, command = lengths[0]
        return (
            f"the claimed {value} was printed by `{command}`, which counts the "
            "lines inside the files it names, not the files: list the files and "
            "count the list (find DIR -type f -name '*.py' | wc -l); "
            f"{NO_EVIDENCE}"
        )
    read = [
        f
        for f in dict.fromkeys(FACT.findall(claim))
        if is_number(f) and not appears(f, known) and not computed(f, result.tool_calls)
    ]
    errors = [computing_error(f, result.tool_calls) for f in read]
    if read and all(errors):
        return (
            f"the command that printed {read[0]!r} also reported an error "
            f"({_quote(errors[0])}), so it counted what is not there; fix the "
            f"command (write the path itself) and run it again; {NO_EVIDENCE}"
        )
    counted = asks_for_count(request, subtask.intent, subtask.context)
    of_files = asks_for_file_count(request, subtask.intent)
    if empty_sum(claim) and counted and not shows_nothing(calls, of_files):
        return (
            "the claimed count is 0, but no tool listing shows that nothing is "
            "there: a count of 0 often comes from looking in the wrong place (ls "
            "without the files in subdirectories, a pattern that matches nothing); "
            "list what is counted (find DIR -name '*.py', grep -rn WORD DIR), "
            f"then count that; {NO_EVIDENCE}"
        )
    if not read:
        return ""
    named = ", ".join(repr(f) for f in read[:5])
    return (
        f"the claimed output states {named} as a total or count, but no tool computed "
        "it: a value read among others from a file or listing is data, not the "
        f"answer; {_compute(request, subtask, result)}; {NO_EVIDENCE}"
    )


def _unshown_extreme(request: str, claim: str, calls: list[str]) -> str:
    """Return why a claimed highest (lowest) value of a CSV column is not shown
    when no command printed it, with the command that does, else ""."""
    command = column_extreme_command(request, calls)
    if not (command and states_a_result(claim)):
        return ""
    numbers = [f for f in dict.fromkeys(FACT.findall(claim)) if is_number(f)]
    shown = any(c and not e for f in numbers for c, e in printers(f, calls))
    if not numbers or shown:
        return ""
    return (
        f"the claimed {numbers[0]} is one of the values the file holds, which does "
        "not show that it is the highest or lowest of them: call the shell tool "
        f"with the command {command} and answer with its number; {NO_EVIDENCE}"
    )


def _compute(request: str, subtask, result: ExecutionResult) -> str:
    """Return how to compute the stated value: the command itself when the
    request (or the subtask's intent) and what the attempt read make it plain."""
    calls = result.tool_calls
    # A count by a field's value ("have the level ERROR") is not one by a word:
    # ``roles.fieldcount`` names its command once a count is claimed.
    by_word = not field_value(request)[1]
    command = next(
        (
            found
            for text in (request, subtask.intent)
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
