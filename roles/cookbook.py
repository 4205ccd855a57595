"""The standard commands of a Debian box, by what people use them for.

A small model that knows the program answers in one call what it otherwise
reads and works out by hand. R3's system prompt lists them all
(``roles.executor_prompts``); a correction names the ones for the kind of
answer asked, after the step that failed (``nudge``)::

    nudge("count", ["shell: {\\"command\\": \\"wc -l f\\"} → [exit code 0]\\n31 f"])
    # "The step that failed: `wc -l f` printed 31. Next, try: lines holding
    #  TEXT: grep -c 'TEXT' FILE; …"

Shapes only (FILE, DIR, TEXT, N are placeholders), no task's data.
"""

from __future__ import annotations

from collections.abc import Sequence

from roles.claims.evidence import parse_evidence, split_exit_code

__all__ = ["COOKBOOK", "cookbook_text", "lines_for", "nudge", "nudges"]

# (the answer kinds a line serves, the line). A count of one kind is
# ``count:<count_of>`` (``roles.claims.question``); ``count`` serves any count.
# A line is a command per use, never a list of options: a 1.5B executor shown
# "find DIR -type f (…; -empty; -perm -u+x)" for hidden files added every
# option it saw and counted the empty ones.
COOKBOOK: tuple[tuple[tuple[str, ...], str], ...] = (
    (("count",), "lines: wc -l < FILE; lines holding TEXT: grep -c 'TEXT' FILE; "
     "occurrences: grep -o 'TEXT' FILE | wc -l"),
    (("count",), "rows whose field N equals TEXT (separator ':'): "
     "awk -F: '$N==\"TEXT\"' FILE | wc -l"),
    (("count",), "distinct values of field N: awk '{print $N}' FILE | sort -u | wc -l"),
    (("name", "names"), "most frequent value: awk '{print $N}' FILE | sort | "
     "uniq -c | sort -rn | head -3"),
    (("total", "number", "name"), "sum of column N of a CSV: "
     "awk -F, 'NR>1 {s+=$N} END {print s}' FILE; largest: sort -t, -k N -g FILE | "
     "tail -1"),
    (("count:files", "names", "path"), "files: find DIR -type f -name '*.EXT' | "
     "wc -l; only those directly in DIR: find DIR -maxdepth 1 -type f | wc -l"),
    (("total", "number", "path", "name"), "file sizes in bytes: find DIR -type f "
     "-printf '%s %p\\n' | sort -n (largest last); their total: find DIR -type f "
     "-printf '%s\\n' | awk '{s+=$1} END {print s}' (du counts disk blocks and "
     "directories); newest: ls -t DIR | head -1"),
    (("path", "names"), "which file holds TEXT: grep -rl 'TEXT' DIR; where: "
     "grep -rn 'TEXT' DIR"),
    (("value", "yes_no"), "a setting's value: grep -n 'KEY' FILE; JSON: python3 -c "
     "'import json; print(json.load(open(\"FILE\"))[\"KEY\"])'"),
    (("effect",), "change a file in place: sed -i 's/OLD/NEW/' FILE, then show it "
     "with grep"),
    (("number", "value"), "run a function: cd DIR && python3 -c 'from "
     "MODULE import F; print(F(ARG))'"),
    (("number", "effect"), "dates: date -d 'YYYY-MM-DD' +%s; archives: tar -tzf "
     "FILE lists, tar -czf OUT.tar.gz -C PARENT NAME packs"),
)  # fmt: skip
NUDGE_LINES = 2
SHOWN = 80


def cookbook_text() -> str:
    """Return the cookbook as the executor's system prompt lists it."""
    lines = "\n".join(f"- {line}" for _, line in COOKBOOK)
    return f"Standard commands (FILE, DIR, TEXT, N are placeholders):\n{lines}\n\n"


def lines_for(answer: str, count_of: str = "") -> list[str]:
    """Return the cookbook's first lines for an answer of kind ``answer``: a
    count's own kind (``count_of``) first."""
    own = [line for kinds, line in COOKBOOK if f"{answer}:{count_of}" in kinds]
    rest = [line for kinds, line in COOKBOOK if answer in kinds]
    return [*own, *rest][:NUDGE_LINES]


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
        said = " ".join(split_exit_code(last.output)[1].split())[:SHOWN]
        what = (
            f"`{command}`" if isinstance(command, str) else f"{last.tool} {last.target}"
        )
        step = f"The step that failed: {what} printed {said or 'nothing'!r}. "
    return f"{step}Next, try: {'; or '.join(lines)}"


def nudges(model: object) -> bool:
    """Return True when ``model``'s settings ask corrections to name the next
    commands to try (the offline model has no settings and names none)."""
    return bool(getattr(getattr(model, "settings", None), "nudges", False))
