"""The standard commands of a Debian box, by what people use them for.

A small model that knows the program answers in one call what it otherwise
reads and works out by hand. R3's system prompt lists them all
(``roles.executor_prompts``); a correction names the ones for the kind of
answer asked, after the step that failed (``nudge``)::

    nudge("count", ["shell: {\\"command\\": \\"wc -l f\\"} → [exit code 0]\\n31 f"])
    # "The step that failed: `wc -l f` printed 31. Next, try one of:
    #    wc -l < FILE  # lines
    #    grep -c 'TEXT' FILE  # lines holding TEXT …"

Shapes only (FILE, DIR, TEXT, N are placeholders), no task's data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from roles.claims.evidence import parse_evidence, split_exit_code
from roles.toolclass import tool_classes

__all__ = ["COOKBOOK", "cookbook_text", "lines_for", "nudge", "nudges"]

# (the answer kinds an entry serves, the command, what it computes). An entry
# serves the kinds of answer its output is: a pipeline that ends in a count
# serves counts only, and a listing of paths serves paths and names, never a
# count (``test_an_entry_serves_the_answers_its_output_is``). A count of one
# kind is ``count:<count_of>`` (``roles.claims.question``); ``count`` serves
# any count. Within a kind, the most general way comes first (a search by
# content or by name before a ranking by size or time): a nudge names the
# first NUDGE_LINES. Each entry is one command a shell runs as written once
# its placeholders are filled, and what it computes follows as a shell
# comment: a 1.5B executor shown "lines: wc -l < FILE" ran "lines: wc -l < …",
# and shown "find DIR -type f (…; -empty; -perm -u+x)" added every option it
# saw.
COOKBOOK: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("count",), "wc -l < FILE", "lines"),
    (("count",), "grep -c 'TEXT' FILE", "lines holding TEXT"),
    (("count",), "grep -o 'TEXT' FILE | wc -l", "occurrences of TEXT"),
    (("count",), "awk -F: '$N==\"TEXT\"' FILE | wc -l",
     "rows whose field N equals TEXT (separator ':')"),
    (("count",), "awk '{print $N}' FILE | sort -u | wc -l",
     "distinct values of field N"),
    (("name", "names"), "awk '{print $N}' FILE | sort | uniq -c | sort -rn | head -3",
     "most frequent values of field N"),
    (("total", "number"), "awk -F, 'NR>1 {s+=$N} END {print s}' FILE",
     "sum of column N of a CSV"),
    (("number", "name"), "sort -t, -k N -g FILE | tail -1",
     "the row with the largest column N"),
    (("path", "names"), "grep -rl 'TEXT' DIR", "the files that hold TEXT"),
    (("path", "names"), "grep -rn 'TEXT' DIR", "where TEXT is"),
    (("path", "name", "names"), "find DIR -type f -name 'NAME'",
     "the files named NAME (a glob such as '*.EXT' too)"),
    (("count:files",), "find DIR -type f -name '*.EXT' | wc -l",
     "files under DIR"),
    (("count:files",), "find DIR -maxdepth 1 -type f | wc -l",
     "files directly in DIR, not in its subdirectories"),
    (("count:files",), "ls -R DIR | grep -c '\\.EXT$'",
     "files under DIR named *.EXT, by their names"),
    (("path", "name"), "find DIR -type f -printf '%s %p\\n' | sort -n",
     "file sizes in bytes, largest last"),
    (("total", "number"),
     "find DIR -type f -printf '%s\\n' | awk '{s+=$1} END {print s}'",
     "their total size in bytes (du counts disk blocks and directories)"),
    (("path", "name"), "ls -t DIR | head -1", "the newest entry"),
    (("value", "yes_no"), "grep -n 'KEY' FILE", "a setting's value"),
    (("value", "yes_no"),
     "python3 -c 'import json; print(json.load(open(\"FILE\"))[\"KEY\"])'",
     "a JSON key's value"),
    (("effect",), "sed -i 's/OLD/NEW/' FILE && grep -n 'NEW' FILE",
     "change a file in place and show it"),
    (("number", "value"), "cd DIR && python3 -c 'from MODULE import F; print(F(ARG))'",
     "run a function"),
    (("number", "effect"), "date -d 'YYYY-MM-DD' +%s", "a date in seconds"),
    (("names", "effect"), "tar -tzf FILE", "list an archive"),
    (("effect",), "tar -czf OUT.tar.gz -C PARENT NAME", "pack a directory"),
)  # fmt: skip
NUDGE_LINES = 3
# A failed step's output as a correction quotes it: its first and its last
# line, each cut to SHOWN characters. A tool's own hint, or the error that
# ends a traceback, is often the last line.
SHOWN = 80


def entry(command: str, label: str) -> str:
    """Return a cookbook entry as the model reads it: the command, then what it
    computes as a shell comment, so that the whole line runs as written."""
    return f"{command}  # {label}"


def cookbook_text() -> str:
    """Return the cookbook as the executor's system prompt lists it."""
    lines = "\n".join(f"  {entry(c, label)}" for _, c, label in COOKBOOK)
    return f"Standard commands (FILE, DIR, TEXT, N are placeholders):\n{lines}\n\n"


def lines_for(
    answer: str, count_of: str = "", besides: frozenset[str] = frozenset()
) -> list[str]:
    """Return the cookbook's first entries for an answer of kind ``answer``:
    those of a count's own kind (``count_of``) when it has some, else those
    of any count. An entry whose tool classes are ``besides`` exactly is left
    out: a second derivation "by other means" is not shown the first's."""
    own = [(c, la) for kinds, c, la in COOKBOOK if f"{answer}:{count_of}" in kinds]
    ways = own or [(c, la) for kinds, c, la in COOKBOOK if answer in kinds]
    if besides:
        ways = [(c, la) for c, la in ways if set(_classes(c)) != besides]
    return [entry(c, la) for c, la in ways][:NUDGE_LINES]


def _classes(command: str) -> list[str]:
    return tool_classes("shell", {"command": command})


def nudge(answer: str, tool_calls: Sequence[str], count_of: str = "") -> str:
    """Return the step that failed (the attempt's last call) and the cookbook
    lines for an answer of kind ``answer`` (of a count of ``count_of``) to try
    next, or ""."""
    lines = lines_for(answer, count_of)
    if not lines:
        return ""
    calls = [c for c in map(parse_evidence, tool_calls) if c is not None]
    step = ""
    if calls:
        last = calls[-1]
        command = last.args.get("command") if last.tool == "shell" else None
        said = _ends(split_exit_code(last.output)[1])
        what = (
            f"`{command}`" if isinstance(command, str) else f"{last.tool} {last.target}"
        )
        step = f"The step that failed: {what} printed {said or 'nothing'!r}. "
    listed = "".join(f"\n  {line}" for line in lines)
    return f"{step}Next, try one of:{listed}"


def _ends(output: str) -> str:
    """Return ``output``'s first and last lines that hold a word (its only
    one when it has one), each cut to SHOWN characters, joined by " … ". A
    line of punctuation alone (the ")" that closes a tool's note) says
    nothing."""
    lines = [" ".join(line.split()) for line in output.splitlines()]
    lines = [line[:SHOWN] for line in lines if re.search(r"\w", line)]
    if len(lines) <= 1:
        return "".join(lines)
    return f"{lines[0]} … {lines[-1]}"


def nudges(model: object) -> bool:
    """Return True when ``model``'s settings ask corrections to name the next
    commands to try (the offline model has no settings and names none)."""
    return bool(getattr(getattr(model, "settings", None), "nudges", False))
