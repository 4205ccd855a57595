"""R4a's rows on counts: what a count counts, and the ways a counter misleads.

A count is judged by the parsed command that printed it
(``roles.claims.command``): a count of distinct values, files, matching lines
or words must be printed by a command that counts that kind; wc's ``total``
line picked as one file's count, a line count of a file whose last line has no
newline, a count by a field's value from the wrong field, and a count of files
by a loose name pattern are refused with the command that computes it.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from roles.claims.command import parse_command
from roles.claims.command_queries import (
    command_counts,
    counts,
    counts_every_line,
    listing_depth,
)
from roles.claims.computed import (
    computed,
    counts_other_lines,
    is_number,
    printers,
    states_a_result,
)
from roles.claims.engine import Case
from roles.claims.evidence import split_exit_code
from roles.claims.facts import FACT
from roles.claims.field_values import miscounted
from roles.claims.name_patterns import loose_count_reason, loose_extension_count
from roles.claims.question_words import stated_conditions
from roles.claims.quoted_fields import split_quoted
from roles.claims.unterminated import uncounted_last_line

NO_EVIDENCE = "the executor's claimed output is not evidence"
COMPUTE = "run a command that prints it (wc -l, grep -c, awk)"
QUOTE = 300
WC_TOTAL = re.compile(r"(\d+)\s+total")
# A planner's enumeration ("Step 1: read the file", "2) count") states no fact:
# its numbers do not make a claimed count of 1 or 2 known.
LABEL = re.compile(
    r"\b(?:step|part|stage|phase)\s+\d+\b|^\s*\(?\d+[.)](?=\s)", re.I | re.M
)


def known(case: Case) -> str:
    subtask = case.subtask
    return LABEL.sub(" ", f"{subtask.intent}\n{subtask.context}\n{case.request}")


def claimed_numbers(case: Case) -> list[str]:
    """Return the numbers the claim states, less those it restates from the
    request (the 10, 00 and 59 of "between 10:00 and 10:59"), unless it
    states no other."""
    numbers = [f for f in dict.fromkeys(FACT.findall(case.claim)) if is_number(f)]
    asked = set(FACT.findall(case.request))
    return [f for f in numbers if f not in asked] or numbers


def totals(case: Case) -> bool:
    return case.asks("count", "total")


def printed_by(case: Case, numbers: list[str]) -> list[tuple[str, str]]:
    """Return (value, command) for each shell command that printed one of
    the claimed ``numbers`` without an error."""
    return [
        (value, command)
        for value in numbers
        for command, error in printers(value, case.calls)
        if command and not error
    ]


def states_total(case: Case) -> bool:
    return totals(case) and states_a_result(case.claim)


# Words that ask for a size: a file's size is an answer only to these.
SIZE_ASKED = re.compile(
    r"\b(?:sizes?|bytes?|[kmgt]i?b|(?:kilo|mega|giga)bytes?|disk|space|how\s+big"
    r"|how\s+large|weigh\w*|(?:big|bigg|larg|small)\w*\s+(?:\w+\s+)?(?:files?|"
    r"director(?:y|ies)|folders?|logs?))\b",
    re.IGNORECASE,
)


def size_for_other_number(case: Case) -> str:
    """A number (a total, the largest value …) whose request says nothing of
    sizes, answered with one only commands that print files' sizes printed
    (``du``, ``stat -c %s``, ``find -printf %s``, ``ls -S``'s column): a file's
    size is no value its data holds."""
    if not (case.question.numeric or case.asked.numeric) or case.asks("count"):
        return ""
    words = " ".join(
        [case.request, *(f"{q.subject} {q.field}" for q in (case.question, case.asked))]
    )
    numbers = claimed_numbers(case)
    if SIZE_ASKED.search(words) or not (numbers and states_a_result(case.claim)):
        return ""
    printed = printed_by(case, numbers)
    if not printed or any(
        command_counts(parse_command(c)) != "size" for _, c in printed
    ):
        return ""
    value, command = printed[0]
    return (
        f"the claimed {value} was printed by `{command}`, which prints files' sizes "
        "in bytes, and the request asks for no size: compute it from what the "
        f"files hold (sort -n FILE | tail -1; awk); {NO_EVIDENCE}"
    )


def counted_word(case: Case) -> str:
    for q in (case.question, case.asked):
        if q.answer == "count" and q.matching:
            return q.matching
    return ""


# What a count of each kind may be computed by (``command_counts``'s kinds).
# A count of lines or rows may be any count of lines (matching or distinct
# ones, a list of files) or a sum of such counts, never a size or a word count.
LINE_COUNTS = ("lines", "matches", "distinct", "sum")
COUNTED_BY = {
    "distinct": ("distinct",),
    "files": ("files",),
    "matches": ("matches",),
    "words": ("words",),
    "lines": LINE_COUNTS,
    "rows": LINE_COUNTS,
}


def counts_other_kind(case: Case) -> str:
    """A count of one kind (distinct values, files, matching lines, words,
    lines) answered with a number a command printed that counts another kind
    or measures something else (a size): every command that printed it
    computes something, and none counts what is asked."""
    asked = [
        q.count_of for q in (case.question, case.asked) if q.count_of in COUNTED_BY
    ]
    # The narrower kind decides: a step that counts distinct lines of a request
    # that counts lines is judged as a count of distinct lines.
    kind = next(
        (k for k in asked if k not in ("lines", "rows")), asked[0] if asked else ""
    )
    numbers = claimed_numbers(case)
    if not (kind and states_total(case) and numbers):
        return ""
    printed = [
        (value, command, command_counts(parse_command(command)))
        for value, command in printed_by(case, numbers)
    ]
    if not printed or any(k in COUNTED_BY[kind] or not k for _, _, k in printed):
        return ""
    value, command, counted = printed[0]
    said = f"the claimed {value} was printed by `{command}`, which"
    word = counted_word(case)
    if kind == "files" and counted == "lines":
        return (
            f"{said} counts the lines inside the files it names, not the files: "
            "list the files and count the list (find DIR -type f -name '*.EXT' | "
            f"wc -l); {NO_EVIDENCE}"
        )
    if kind == "matches" and word:
        return (
            f"{said} does not look for {word!r}: it counts every line, not the "
            f"lines that hold {word!r}; count only those (grep -c "
            f"{shlex.quote(word)} FILE); {NO_EVIDENCE}"
        )
    verb = "prints" if counted in PRINTS else "counts"
    return (
        f"{said} {verb} {PRINTS.get(counted, counted)}, and the question asks for "
        f"the number of {ASKED_KIND[kind]}: count those ({COUNT_HOW[kind]}); "
        f"{NO_EVIDENCE}"
    )


ASKED_KIND = {
    "distinct": "distinct values",
    "files": "files",
    "matches": "lines that match",
    "words": "words",
    "lines": "lines",
    "rows": "rows",
}
COUNT_HOW = {
    "distinct": "… | sort -u | wc -l",
    "files": "find DIR -type f -name PATTERN | wc -l",
    "matches": "grep -c PATTERN FILE",
    "words": "wc -w FILE",
    "lines": "wc -l FILE",
    "rows": "wc -l FILE",
}
# What a command that printed a number prints, when it is no count.
PRINTS = {"size": "files' sizes", "bytes": "bytes", "chars": "characters"}


def total_of_many(case: Case) -> str:
    """A number picked out of wc's counts of several files by sorting them and
    taking the first or last line (the largest, the smallest), when the line
    taken is wc's ``total``: the sum over all the files, which sorts above any
    one of them, not the count of the file picked."""
    if not states_total(case):
        return ""
    for value in claimed_numbers(case):
        for call in case.records:
            output = split_exit_code(call.output)[1].strip()
            found = (
                WC_TOTAL.fullmatch(output.splitlines()[-1].strip()) if output else None
            )
            command = call.args.get("command") if call.tool == "shell" else None
            if found and found[1] == value and isinstance(command, str):
                if _picks_from_counts(parse_command(command)):
                    return (
                        f"the claimed {value} is the total line wc prints after "
                        f"several files, picked by `{command}`: the sum over all "
                        "of them sorts above each one; leave it out (grep -v ' "
                        "total$') or find the one file first and run wc -l on it "
                        f"alone; {NO_EVIDENCE}"
                    )
    return ""


def _picks_from_counts(command) -> bool:
    """True when a pipeline counts with wc, then sorts and takes one end."""
    for pipeline in command.pipelines:
        names = [p.name for p in pipeline.programs]
        if "wc" in names and "sort" in names[names.index("wc") :]:
            after = names[names.index("sort", names.index("wc")) :]
            if {"head", "tail"} & set(after):
                return True
    return False


def counts_the_excluded(case: Case) -> str:
    """A count the request says leaves something out (the header, comments),
    answered with a number only commands that count every line they read
    printed (``wc -l FILE``): what was to be left out is in it."""
    left_out = next(
        (q.excluding for q in (case.question, case.asked) if q.excluding), ""
    )
    numbers = claimed_numbers(case)
    if not (left_out and case.asks("count") and states_total(case) and numbers):
        return ""
    printed = printed_by(case, numbers)
    if not printed or not all(counts_every_line(parse_command(c)) for _, c in printed):
        return ""
    value, command = printed[0]
    return (
        f"the request leaves out {left_out}, and the claimed {value} was printed "
        f"by `{command}`, which counts every line it reads, {left_out} among "
        "them: count without them (a header line: tail -n +2 FILE | wc -l; "
        f"lines that hold something: grep -vc PATTERN FILE); {NO_EVIDENCE}"
    )


DEPTH_SAID = {
    "top": "only the files directly in the directory, not in its subdirectories",
    "all": "the files of its subdirectories too",
}
DEPTH_DONE = {
    "top": "lists its subdirectories' files too",
    "all": "lists only the entries directly in the directory",
}
DEPTH_HOW = {
    "top": "find DIR -maxdepth 1 -type f | wc -l",
    "all": "find DIR -type f | wc -l",
}


def counts_at_other_depth(case: Case) -> str:
    """A count of files that the request says looks only directly in a
    directory (or into its subdirectories too), printed only by listings that
    look at the other depth (``find DIR`` descends; ``ls DIR`` does not)."""
    asked = next((q.depth for q in (case.question, case.asked) if q.depth), "")
    numbers = claimed_numbers(case)
    if not (asked and case.asks("count") and states_total(case) and numbers):
        return ""
    printed = [
        (value, command, _depths(command))
        for value, command in printed_by(case, numbers)
    ]
    if not printed or any(not d or asked in d for _, _, d in printed):
        return ""
    value, command, _ = printed[0]
    return (
        f"the request asks for {DEPTH_SAID[asked]}, and the claimed {value} was "
        f"printed by `{command}`, which {DEPTH_DONE[asked]}: count at the depth "
        f"asked ({DEPTH_HOW[asked]}); {NO_EVIDENCE}"
    )


def _depths(command: str) -> set[str]:
    """Return the depths the counting pipelines of ``command`` list at."""
    pipelines = parse_command(command).pipelines
    return {d for p in pipelines if counts(p) and (d := listing_depth(p))}


def counter_ignores_word(case: Case) -> str:
    """A count of the lines that hold something the request states (the word
    counted lines hold, a quoted text, a word in capitals, a path that is no
    file the command reads, a time), printed by commands none of which looks
    for any of it: they count every line."""
    words = condition_words(case)
    numbers, calls = claimed_numbers(case), case.calls
    if not (words and states_total(case)):
        return ""
    wrong = [
        (f, c, w)
        for f in numbers
        for w in words
        if (c := counts_other_lines(f, w, calls))
    ]
    right = any(
        computed(f, calls) and not counts_other_lines(f, w, calls)
        for f in numbers
        for w in words
    )
    if not wrong or right:
        return ""
    value, command, word = wrong[0]
    return (
        f"the claimed {value} was printed by `{command}`, which does not look "
        f"for {word!r}: it counts every line, not the lines that hold {word!r}; "
        f"count only those (grep -c {shlex.quote(word)} FILE); {NO_EVIDENCE}"
    )


def condition_words(case: Case) -> list[str]:
    """Return what the counted lines must hold: the Question's word, then the
    literal values the request states, less the paths that say where to
    count."""
    word = counted_word(case)
    commands = " ".join(c for c, _ in printers_of(case))
    stated = stated_conditions(case.request)
    paths = [v for v in stated if v.startswith("/")]
    # One path is where to count; of several, one a command names is a file it
    # reads, and the others are values the lines hold ("use /bin/bash").
    named = {p for p in paths if len(paths) < 2 or posixpath.basename(p) in commands}
    stated = [v for v in stated if v not in named]
    return list(dict.fromkeys([word, *stated] if word else stated))


def printers_of(case: Case) -> list[tuple[str, str]]:
    """Return the commands (and errors) that printed the claim's numbers."""
    return [p for f in claimed_numbers(case) for p in printers(f, case.calls)]


def field_miscount(case: Case) -> str:
    """A count by a field's value taken from the wrong field or a split quote."""
    if not states_total(case):
        return ""
    numbers, request = claimed_numbers(case), case.request
    return miscounted(request, numbers, case.calls) or split_quoted(
        request, numbers, case.calls
    )


def last_line_missed(case: Case) -> str:
    """A line count by wc -l of a file whose last line has no newline."""
    if not states_total(case):
        return ""
    short = uncounted_last_line(claimed_numbers(case), case.calls)
    return f"{short}; {NO_EVIDENCE}" if short else ""


def loose_name_count(case: Case) -> str:
    """A count of files by an extension pattern that also matches other names."""
    numbers, calls = claimed_numbers(case), case.calls
    if not (states_total(case) and case.counts("files") and numbers):
        return ""
    loose = [(f, c) for f in numbers if (c := loose_extension_count(f, calls))]
    if len(loose) != len(numbers):
        return ""
    return f"{loose_count_reason(*loose[0])}; {NO_EVIDENCE}"
