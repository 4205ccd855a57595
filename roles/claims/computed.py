"""A total is computed, not read: the evidence rule for counts, sums and averages.

Asked for a total over a data file, a small model often copies one value of the
file, and that value is in a tool output (the file it read), so the plain
evidence rule passes it. When the request or the subtask asks for an aggregate,
a number in the claim counts as shown only where a tool computed it: as the last
number of a tool's output (``137 data.txt``, ``Total: 44025``, the ``total`` line
of ``wc -l a b``), or where the request or subtask itself states it. A value
that a file read or a listing shows among others is data, not the answer. A
claim that lists more than ``RESULT_NUMBERS`` numbers reports data (a file's
rows, a column) rather than a total, and is judged by the plain rule. (A
read whose last value happens to be the claimed number still passes: the rule
narrows what counts as shown, it cannot prove a total.)

A computed sum or average of 0 is refused too: awk, bc and friends print 0 for
a column that holds text or a field that does not exist, so over real data a 0
total almost always names the wrong column. A count of 0 needs a listing that
shows nothing is there (a ``find`` or ``grep`` that printed nothing, a glob that
matched nothing): ``ls dir | grep -c .py`` prints 0 for a tree whose files are
in subdirectories, and a count alone cannot tell "none" from "looked wrong".

A number is not computed by a command whose output also reports an error
(``find: 'logs': No such file or directory``, ``bash: line 1: dir: unbound
variable``): ``find $dir | wc -l`` with ``$dir`` unset, or ``wc -l`` over a
path that does not exist, prints a count of what was not there.

What the request asks for (a count, a sum, the lines that hold a word) is read
in ``roles.claims.question_words``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from roles.claims.command import parse_command
from roles.claims.command_queries import (
    COUNTS,
    command_counts,
    runs,
)
from roles.claims.command_queries import looks_for as selects_with
from roles.claims.evidence import (
    READ_TOOLS,
    ToolCall,
    parse_evidence,
    split_exit_code,
)
from roles.claims.question_words import (
    ALL_LINES,
    SOME_LINES,
    asks_for_sum,
    counted_word,
)

# roles.claims.evidence_rules imports these three from here.
from roles.claims.question_words import asks_for_aggregate as asks_for_aggregate
from roles.claims.question_words import asks_for_count as asks_for_count
from roles.claims.question_words import asks_for_file_count as asks_for_file_count

RESULT_NUMBERS = 3
# A command's own error line: ``prog: [line N: ]…: <error>``.
ERROR_LINE = re.compile(
    r"^[\w./+-]+: (?:line \d+: )?.*?(?:unbound variable|No such file or directory"
    r"|Permission denied|cannot access|cannot open|Is a directory"
    r"|Not a directory|command not found)\b.*$",
    re.MULTILINE,
)
# Programs that list files or lines: printing nothing, they found nothing.
LISTERS = frozenset({"find", "grep", "egrep", "fgrep", "rg", "ls"})
LINE_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg"})
# A quoted CSV field that holds a comma: awk -F, and cut -d, split inside it.
QUOTED_COMMA = re.compile(r'(?:^|,)"[^"\n]*,[^"\n]*"(?=,|\r?$)', re.MULTILINE)
# A number standing on its own: not a digit run inside a path, a name or a date.
# A grouped number (10,000) is one number.
NUMBER = re.compile(
    r"(?<![\w./:-])(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.\d+)?(?![\w/-]|\.\d)"
)


def is_number(fact: str) -> bool:
    """Return True when ``fact`` (one of the claim's facts) is a plain number."""
    return NUMBER.fullmatch(fact) is not None


def states_a_result(claim: str) -> bool:
    """Return True when the claim states a few numbers (a result), not a listing."""
    return 0 < len(set(NUMBER.findall(claim))) <= RESULT_NUMBERS


def computed(value: str, entries: Iterable[str]) -> bool:
    """Return True when some tool output without an error line ends in ``value``."""
    return any(not error for _, error in printers(value, entries))


def computing_error(value: str, entries: Iterable[str]) -> str:
    """Return the error line of a tool output that ends in ``value``, else ""."""
    return next((error for _, error in printers(value, entries) if error), "")


def only_counted(value: str, entries: Iterable[str]) -> bool:
    """Return True when every command that printed ``value`` as its last number
    counts lines, matches or files (``wc``, ``grep -c``): a count, never a sum."""
    commands = [command for command, _ in printers(value, entries)]
    return bool(commands) and all(is_count(c) for c in commands)


def is_count(command: str) -> bool:
    """Return True when the number ``command`` computes last is a count (of
    lines, words, matches, distinct lines or files), not a sum."""
    return command_counts(parse_command(command)) in COUNTS


def printers(value: str, entries: Iterable[str]) -> Iterable[tuple[str, str]]:
    """Yield ``(command, first error line)`` of each tool output whose last
    number is ``value`` (the command is "" for a call of another tool)."""
    for entry in entries:
        call = parse_evidence(entry)
        if call is None or call.output.lstrip().startswith(("ERROR:", "[LAW1]")):
            continue
        output = split_exit_code(call.output)[1]
        numbers = NUMBER.findall(output)
        if numbers and _same(numbers[-1], value):
            error = ERROR_LINE.search(output)
            command = call.args.get("command") if call.tool == "shell" else ""
            yield str(command or ""), error.group(0).strip() if error else ""


def _same(a: str, b: str) -> bool:
    try:
        return float(a.replace(",", "")) == float(b.replace(",", ""))
    except ValueError:
        return a == b


def shows_nothing(entries: Iterable[str], files: bool = True) -> bool:
    """Return True when some listing found nothing: a ``find``, ``grep`` or
    ``ls`` that printed no line at all, or a glob that matched no file. A
    command that prints nothing anyway (``cd``, ``mkdir``) shows nothing of it.

    With ``files`` False (what is counted are lines or rows, not files), only a
    search for lines (``grep``, ``rg``) counts: no file matching a glob shows
    nothing of how many rows a file has.
    """
    listers = LISTERS if files else LINE_SEARCHERS
    for entry in entries:
        call = parse_evidence(entry)
        if call is None or call.output.lstrip().startswith(("ERROR:", "[LAW1]")):
            continue
        body = split_exit_code(call.output)[1].strip()
        if files and call.tool == "glob" and body.startswith("(no files matched"):
            return True
        command = str(call.args.get("command") or "") if call.tool == "shell" else ""
        if not body and runs(parse_command(command), listers) and not is_count(command):
            return True
    return False


def empty_sum(claim: str) -> bool:
    """Return True when the numbers the claim states are all zero."""
    numbers = NUMBER.findall(claim)
    return bool(numbers) and all(float(n.replace(",", "")) == 0 for n in numbers)


def line_count_command(request: str, entries: Iterable[str]) -> str:
    """Return ``wc -l FILE`` when ``request`` asks how many lines a file has and
    the attempt read exactly one file, FILE; else "".

    A small model told to "run a command" after reading the file often reads it
    again; the command itself, on the file it read, is what it needs to see.
    """
    if not ALL_LINES.search(request or "") or SOME_LINES.search(request or ""):
        return ""
    path = _one_read(entries)
    return f"wc -l {shlex.quote(path)}" if path else ""


def word_count_command(request: str, entries: Iterable[str]) -> str:
    """Return ``grep -c WORD FILE`` when ``request`` asks how many lines hold a
    word (``counted_word``) and the attempt read exactly one file, FILE; else "".

    Told only to "run a command that prints it (wc -l, grep -c, awk)", a small
    model takes the first and counts every line of the file.
    """
    word = counted_word(request)
    path = _one_read(entries) if word else ""
    return f"grep -c {shlex.quote(word)} {shlex.quote(path)}" if path else ""


def _one_read(entries: Iterable[str]) -> str:
    """Return the path of the one file the attempt read, or "" (none, several)."""
    paths = []
    for entry in entries:
        call = parse_evidence(entry)
        path = call.args.get("path") if call and call.tool in READ_TOOLS else None
        if isinstance(path, str) and path.strip() and path not in paths:
            paths.append(path)
    return paths[0] if len(paths) == 1 else ""


# Programs that show a file's first lines as they are.
SHOWS_HEAD = frozenset({"head", "cat", "less", "more"})


def _csv_shown(call: ToolCall) -> str | None:
    """Return the CSV file whose first lines a call showed: read by the file
    tool, or by one program that prints it as it is (``head -1 sales.csv``)."""
    if call.tool == "read_file":
        path = call.args.get("path")
        return path if isinstance(path, str) and path.lower().endswith(".csv") else None
    command = call.args.get("command") if call.tool == "shell" else None
    if not isinstance(command, str) or split_exit_code(call.output)[0] not in (0, None):
        return None
    lines = parse_command(command).pipelines
    if len(lines) != 1 or len(lines[0].programs) != 1:
        return None
    (program,) = lines[0].programs
    csvs = [o for o in program.operands if o.lower().endswith(".csv")]
    return csvs[0] if program.name in SHOWS_HEAD and len(csvs) == 1 else None


def column_total_command(request: str, entries: Iterable[str]) -> str:
    """Return the awk command that sums (or averages) the one column of a CSV
    header that ``request`` names, over the one CSV file the attempt read;
    else "" (no sum asked, no CSV or several read, no column or several named).
    """
    if not asks_for_sum(request):
        return ""
    reads: dict[str, str] = {}
    for entry in entries:
        call = parse_evidence(entry)
        path = _csv_shown(call) if call else None
        if path:
            reads.setdefault(path, split_exit_code(call.output)[1])
    if len(reads) != 1:
        return ""
    path, text = next(iter(reads.items()))
    header = text.lstrip().split("\n", 1)[0].split(",")
    named = [
        index
        for index, field in enumerate(header)
        if field.strip()
        and re.search(rf"\b{re.escape(field.strip())}\b", request, re.IGNORECASE)
    ]
    if len(named) != 1:
        return ""
    column = named[0] + 1
    average = re.search(r"\b(average|mean)\b", request, re.IGNORECASE) is not None
    if QUOTED_COMMA.search(text):
        return csv_total_command(path, column, average=average)
    if average:
        program = f"NR>1{{s+=${column}; n++}} END{{print s/n}}"
    else:
        program = f"NR>1{{s+=${column}}} END{{print s}}"
    return f"awk -F, '{program}' {shlex.quote(path)}"


def csv_total_command(path: str, column: int, *, average: bool = False) -> str:
    """Return a command that sums (or averages) column ``column`` (1-based) of
    a CSV file with Python's csv module, which keeps a quoted field's commas."""
    total = "sum(v)/len(v)" if average else "sum(v)"
    program = (
        f"import csv,sys; v=[float(r[{column - 1}]) for r in "
        f"list(csv.reader(open(sys.argv[1])))[1:] if len(r)>{column - 1}]; "
        f"s={total}; print(int(s) if s==int(s) else s)"
    )
    return f"python3 -c '{program}' {shlex.quote(path)}"


def counts_other_lines(value: str, word: str, entries: Iterable[str]) -> str:
    """Return the command that printed ``value`` when no command that printed
    it looks for ``word`` (``wc -l app.log`` for the lines holding ERROR),
    else ""."""
    commands = [command for command, error in printers(value, entries) if not error]
    if not commands or any(looks_for(word, c) for c in commands):
        return ""
    return next((c for c in commands if c), "")


def looks_for(word: str, command: str) -> bool:
    """Return True when a filter of ``command`` selects with ``word`` (grep's
    pattern, awk's ``/re/`` or compared string, find's ``-name``): ``grep -c
    ERROR x`` and ``awk '/ERROR/'`` do; ``wc -l error-count/app.log`` and
    ``grep -vc ERROR x``, which counts the lines without it, do not."""
    pipelines = parse_command(command).pipelines
    patterns = [pattern for line in pipelines for pattern in selects_with(line)]
    return any(_overlaps(word.lower(), pattern.lower()) for pattern in patterns)


def _overlaps(word: str, pattern: str) -> bool:
    """True when a filter's pattern holds the word, or the word holds the
    pattern's text (`` 10:`` selects the lines of 10:00, ``bash`` /bin/bash)."""
    if word in pattern:
        return True
    core = pattern.strip(" ^$*.\\'\"")
    return len(core) >= 3 and core in word
