"""R4a's rules of evidence: what a claim states that no tool showed or computed.

The rows of ``EVIDENCE_RULES`` run in order over a ``Case``
(``roles.claims.engine``); the first that fails names itself on the verdict.
The rows on counts are in ``roles.claims.count_rules``. A claim that states a
number or a path no tool output shows is not evidence;
for a question that asks for a total or count (the ``Question``'s answer), the
number must also be one a tool computed (``roles.claims.computed``), by a command
that looks for what was asked. A reason names the command that computes it when
the question and what the attempt read make it plain::

    invented_facts(subtask, result, "How many lines does /srv/a.log have?")
    # "the claimed output states '412' as a total or count, but no tool
    #  computed it: …; call the shell tool with the command wc -l /srv/a.log …"
"""

from __future__ import annotations

import posixpath
import re

from roles.claims.answer_values import ABSOLUTE, NAME, body, successful
from roles.claims.columns import column_count_command, column_extreme_command
from roles.claims.command import Command, parse_command
from roles.claims.command_queries import (
    Order,
    lists_every_entry,
    order,
    printed_keys,
)
from roles.claims.computed import (
    column_total_command,
    computed,
    computing_error,
    empty_sum,
    is_number,
    line_count_command,
    only_counted,
    printers,
    shows_nothing,
    states_a_result,
    word_count_command,
)
from roles.claims.count_rules import (
    COMPUTE,
    NO_EVIDENCE,
    QUOTE,
    claimed_numbers,
    counter_ignores_word,
    counts_at_other_depth,
    counts_other_kind,
    counts_the_excluded,
    field_miscount,
    known,
    last_line_missed,
    loose_name_count,
    size_for_other_number,
    states_total,
    total_of_many,
    totals,
)
from roles.claims.engine import Case, Finding, Rule, decide
from roles.claims.evidence import ToolCall, shows_data
from roles.claims.facts import appears, unshown_facts
from roles.claims.field_values import field_value
from roles.claims.question import Question, question_for
from roles.claims.question_words import restricting_words
from roles.claims.script_runs import unrun_script
from roles.contracts import ExecutionResult
from roles.tools import head_tail

__all__ = [
    "COMPUTE",
    "EVIDENCE_RULES",
    "NOT_AN_ENTRY",
    "NO_EVIDENCE",
    "evidence_finding",
    "invented_facts",
]


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


def script_not_run(case: Case) -> str:
    """A script the subtask was to run and the attempt only wrote or read."""
    unrun = unrun_script(case.subtask.intent, case.calls)
    return f"{unrun}; {NO_EVIDENCE}" if unrun else ""


def unshown(case: Case) -> str:
    """A number or path the claim states that no tool output shows."""
    facts = unshown_facts(case.result, known(case))
    if not facts:
        return ""
    named = ", ".join(repr(f) for f in facts[:5])
    shown = "which no tool output shows"
    asked = case.request or case.subtask.intent
    extreme = column_extreme_command(asked, case.calls)
    if totals(case) and any(is_number(f) for f in facts):
        shown += f"; {_compute(case)}"
    elif extreme and any(is_number(f) for f in facts):
        shown += f"; call the shell tool with the command {extreme} and answer "
        shown += "with its number"
    return f"the claimed output states {named}, {shown}; {NO_EVIDENCE}"


def test_not_shown(case: Case) -> str:
    """A yes or no decided by tests whose output shows nothing of what they
    tested: an exit status or the command's own words say that a pattern
    matched, not what the line that matched says."""
    if not (case.asks("yes_no") and case.records):
        return ""
    if any(shows_data(call) for call in case.records):
        return ""
    tests = [c.args.get("command") for c in case.records if c.tool == "shell"]
    named = f" (`{tests[-1]}`)" if tests and isinstance(tests[-1], str) else ""
    return (
        f"the answer rests on a test that printed nothing of what it tested{named}: "
        "a match or an exit status does not show what the line says; print the "
        "lines that decide it (grep -n WORD FILE, or the file) and answer from "
        f"what they say; {NO_EVIDENCE}"
    )


def unshown_extreme(case: Case) -> str:
    """A claimed highest (lowest) value of a CSV column no command printed."""
    command = column_extreme_command(case.request or case.subtask.intent, case.calls)
    if not (command and states_a_result(case.claim)):
        return ""
    numbers = claimed_numbers(case)
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
    if not (states_total(case) and case.asks("total") and empty_sum(case.claim)):
        return ""
    said = (
        "the claimed sum is 0: a sum tool prints 0 for a field that holds text "
        "or does not exist; print the header (head -1) to find the column's "
        "number, then sum that column"
    )
    # Once the header was read, the command that sums the asked column is known.
    computed = _compute(case)
    return f"{said}; {computed}" if computed != COMPUTE else said


def count_for_sum(case: Case) -> str:
    """A sum answered with a number a line or match counter printed."""
    numbers = claimed_numbers(case)
    if not (states_total(case) and case.asks("total") and numbers):
        return ""
    if not all(only_counted(f, case.calls) for f in numbers):
        return ""
    return (
        f"the claimed {numbers[0]} was printed by a command that counts lines "
        "or matches (wc, grep -c), and a count is not a sum or an average: "
        "print the header (head -1) to find the column's number, then sum "
        "that column (awk -F, 'NR>1{s+=$N} END{print s}' FILE)"
    )


def _read(case: Case) -> list[str]:
    said = known(case)
    return [
        f
        for f in claimed_numbers(case)
        if not appears(f, said) and not computed(f, case.calls)
    ]


def counted_an_error(case: Case) -> str:
    """A number printed by a command that also reported an error."""
    if not states_total(case):
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
    if not (states_total(case) and case.asks("count") and empty_sum(case.claim)):
        return ""
    if shows_nothing(case.calls, case.counts("files")):
        return ""
    return (
        "the claimed count is 0, but no tool listing shows that nothing is "
        "there: a count of 0 often comes from looking in the wrong place (ls "
        "without the files in subdirectories, a pattern that matches nothing); "
        "list what is counted (find DIR -name '*.EXT', grep -rn WORD DIR), "
        f"then count that; {NO_EVIDENCE}"
    )


def read_not_computed(case: Case) -> str:
    """A total or count read among others from a file instead of computed."""
    if not states_total(case):
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


# A long listing's first line ("total 36"), wc's and du's last ("812 total"),
# and the glob tool's last one when it cut the list short: none is an entry.
NOT_AN_ENTRY = re.compile(r"total \d+|\d+\s+total|\[… .*\]")


def every_entry_named(case: Case) -> str:
    """Some entries asked for by what they are, and every entry a listing
    showed named: the answer selected nothing.

    The request restricts which entries it asks for (``restricting_words`` of
    R1's subject, or of its words when R1 stated none), and the names the
    answer states are every entry of a listing (``lists_every_entry``: it
    tested nothing of them but their kind) of two entries or more. It stands
    when a call that tests something printed every name it states too: the
    restriction may hold for every entry, and such a call shows it."""
    if not case.asks("names", "name"):
        return ""
    subject = case.question.subject if case.question.source == "model" else ""
    restricting = restricting_words(subject or case.request)
    calls = successful(case.calls)
    names = _stated_names(case.claim, calls, case.request)
    if not (restricting and len(names) > 1):
        return ""
    listing = next((c for c in calls if _lists_every_name(c, names)), None)
    # A command or a glob that tests something; a file read tests nothing.
    tested = [c for c in calls if c.tool in ("shell", "glob") and not _is_listing(c)]
    if listing is None or any(_shows_all(c, names) for c in tested):
        return ""
    listed = _entries(listing)
    return (
        f"the answer names every one of the {len(listed)} entries "
        f"`{_command_of(listing)}` listed, and the request asks only for some "
        f"of them ({' '.join(restricting)}): that listing tests nothing of "
        "what the request asks of each entry; run a command that tests it "
        "for each entry and prints only those that pass (find with a test, "
        "grep, awk with a condition, a loop with test) and answer with the "
        f"names it prints; {NO_EVIDENCE}"
    )


def _stated_names(claim: str, calls: list[ToolCall], request: str) -> set[str]:
    """Return the names ``claim`` states that a call printed (a path stands
    as its last part), lowercased, not counting the words of the request."""
    text = ABSOLUTE.sub(lambda m: " " + posixpath.basename(m[0].rstrip("/")), claim)
    asked = {w.lower() for w in NAME.findall(request)}
    outputs = "\n".join(body(c) for c in calls).lower()
    return {
        w.lower()
        for w in NAME.findall(text)
        if len(w) > 1 and w.lower() not in asked and appears(w.lower(), outputs)
    }


def _is_listing(call: ToolCall) -> bool:
    if call.tool == "glob":
        pattern = str(call.args.get("pattern") or "")
        return set(posixpath.basename(pattern)) <= {"*"}
    command = call.args.get("command") if call.tool == "shell" else None
    return isinstance(command, str) and lists_every_entry(parse_command(command))


def _entries(call: ToolCall) -> list[str]:
    lines = (line.strip() for line in body(call).splitlines())
    return [line for line in lines if line and not NOT_AN_ENTRY.fullmatch(line)]


def _lists_every_name(call: ToolCall, names: set[str]) -> bool:
    """True when ``call`` is a listing of two entries or more, each named."""
    entries = _entries(call) if _is_listing(call) else []
    return len(entries) > 1 and all(
        any(appears(n, entry.lower()) for n in names) for entry in entries
    )


def _shows_all(call: ToolCall, names: set[str]) -> bool:
    shown = body(call).lower()
    return all(appears(n, shown) for n in names)


def _command_of(call: ToolCall) -> str:
    command = call.args.get("command") if call.tool == "shell" else None
    if isinstance(command, str):
        return _quote(" ".join(command.split()))
    return f"{call.tool} {call.args.get('pattern', '')}".strip()


# What each key of an order is, and the command that orders entries by it.
ORDER_KEYS = {
    "modified": ("the time it was last modified", "ls -t DIR (newest first)"),
    "accessed": ("the time it was last read", "ls -tu DIR (last read first)"),
    "changed": ("the time its status changed", "ls -tc DIR"),
    "size": ("size", "ls -S DIR (largest first)"),
    "lines": ("number of lines", "wc -l DIR/* | sort -n"),
    "words": ("number of words", "wc -w DIR/* | sort -n"),
    "name": ("name", "ls DIR"),
    "content": (
        "a value the files hold",
        "a command that prints each entry's value next to its name "
        "(grep -H KEY FILES), sorted by that value (sort -n)",
    ),
}
ENDS = {
    "modified": ("newest", "oldest"), "accessed": ("last read", "first read"),
    "changed": ("last changed", "first changed"),
    "size": ("largest", "smallest"), "lines": ("most lines", "fewest lines"),
    "words": ("most words", "fewest words"), "name": ("last", "first"),
    "content": ("highest", "lowest"),
}  # fmt: skip


def other_order_key(case: Case) -> str:
    """An entry answered as the extreme of one key (the newest, the largest,
    the most lines, the highest value) that a command picked off an order by
    another: the first entry by size is not the newest. It stands when any
    call ordered the entries by the key asked."""
    key, end = _order_asked(case)
    orders = _orders(case)
    if not key or any(o.key == key for _, o, _ in orders):
        return ""
    # A listing in name order is no choice of the entry when a call printed
    # what the request orders by (ls -l shows each entry's time and size).
    shown = key in _printed_keys(case)
    picked = next(
        (
            (call, o)
            for call, o, first in orders
            if o.key not in ("", "content")
            and first is not None
            and not (o.key == "name" and shown)
        ),
        None,
    )
    if picked is None:
        return ""
    call, used = picked
    asked, command = ORDER_KEYS[key]
    return (
        f"the request asks for the {_end_word(key, end)} entry, by {asked}, and "
        f"the answer is the entry `{_command_of(call)}` put at one end of its "
        f"order by {ORDER_KEYS[used.key][0]}: the extreme of "
        f"one key is not the extreme of another; order the entries by {asked} "
        f"with {command} and answer with the entry at its "
        f"{_end_word(key, end)} end; {NO_EVIDENCE}"
    )


def other_order_end(case: Case) -> str:
    """An entry at the wrong end of an order by the key asked: the oldest
    answered when the newest is asked."""
    key, end = _order_asked(case)
    picks = [(c, o, first) for c, o, first in _orders(case) if o.key == key]
    ends = {o.end(first) for _, o, first in picks if first is not None}
    if not (key and key != "content" and ends) or end in ends:
        return ""
    call, used, first = next(p for p in picks if p[2] is not None)
    place = "first" if first else "last"
    return (
        f"the request asks for the {_end_word(key, end)} entry, and the answer "
        f"is the {place} entry `{_command_of(call)}` printed, which is its "
        f"{_end_word(key, used.end(first))}: take the entry at the other end "
        f"of that order; {NO_EVIDENCE}"
    )


def _printed_keys(case: Case) -> set[str]:
    """Return the keys whose values some call printed for each entry; a file
    read prints what the file holds (``content``)."""
    read = any(c.tool == "read_file" for c in successful(case.calls))
    keys = {"content"} if read else set()
    for _, command in _shell_commands(case):
        for pipeline in command.pipelines:
            keys |= printed_keys(pipeline)
    return keys


def _shell_commands(case: Case) -> list[tuple[ToolCall, Command]]:
    """Return each successful shell call with its parsed command."""
    calls = successful(case.calls)
    return [
        (c, parse_command(c.args["command"]))
        for c in calls
        if c.tool == "shell" and isinstance(c.args.get("command"), str)
    ]


def _order_asked(case: Case) -> tuple[str, str]:
    for question in (case.question, case.asked):
        if question.order_key and question.order_end:
            return question.order_key, question.order_end
    return "", ""


def _end_word(key: str, end: str) -> str:
    return ENDS[key][end != "max"]


def _orders(case: Case) -> list[tuple[ToolCall, Order, bool | None]]:
    """Return each shell call's order of entries (``command_queries.order``)
    and whether the claim names its first printed entry (True), its last
    (False), or neither (None); a call whose command orders in more than one
    pipeline is not read."""
    found = []
    for call, command in _shell_commands(case):
        orders = [o for p in command.pipelines if (o := order(p))]
        if len(orders) == 1:
            found.append((call, orders[0], _picked(call, orders[0], case.claim)))
    return found


def _picked(call: ToolCall, used: Order, claim: str) -> bool | None:
    """Return True when ``claim`` names the first entry of the order ``call``
    printed, False when it names the last one, None for neither (or both)."""
    entries = _entries(call)
    if not entries:
        return None
    if used.kept:
        # head or tail kept that end of the order: its entries start there.
        first = used.kept == "first"
        return first if _names_entry(entries[0 if first else -1], claim) else None
    named = {_names_entry(entries[0], claim), not _names_entry(entries[-1], claim)}
    if len(entries) < 2 or len(named) > 1:
        return None
    return named.pop()


def _names_entry(line: str, claim: str) -> bool:
    """True when ``claim`` names the entry of a listing's ``line`` (the last
    word of it that holds a letter, as a name without its directory, with
    its extension or without)."""
    words = [w for w in line.split() if any(c.isalpha() for c in w)]
    if not words:
        return False
    name = posixpath.basename(words[-1].rstrip("/")).lower()
    names = {name, posixpath.splitext(name)[0]}
    return any(len(n) > 1 and appears(n, claim.lower()) for n in names)


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
    Rule("every-entry-named", every_entry_named),
    Rule("other-order-key", other_order_key),
    Rule("other-order-end", other_order_end),
    Rule("test-not-shown", test_not_shown),
    Rule("unshown-extreme", unshown_extreme),
    Rule("zero-sum", zero_sum),
    Rule("count-for-sum", count_for_sum),
    Rule("counts-other-kind", counts_other_kind),
    Rule("counts-the-excluded", counts_the_excluded),
    Rule("counts-at-other-depth", counts_at_other_depth),
    Rule("size-for-other-number", size_for_other_number),
    Rule("total-of-many", total_of_many),
    Rule("field-miscount", field_miscount),
    Rule("counter-ignores-word", counter_ignores_word),
    Rule("last-line-missed", last_line_missed),
    Rule("loose-name-count", loose_name_count),
    Rule("counted-an-error", counted_an_error),
    Rule("unlisted-zero", unlisted_zero),
    Rule("read-not-computed", read_not_computed),
)
