"""The hint a shell result gets when it says what is wrong but not what to do.

An unset variable, an awk over a CSV file with no field separator, a program
that is not installed, a script file that is not valid Python: each result
keeps its text and gains one bracketed line that says what to do instead::

    [exit code 127]
    bash: line 1: xsv: command not found
    [xsv is not installed here: do the same with standard tools (…) or python3]
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence

from roles.tools.shell import parse_shell_output

_NOT_FOUND = re.compile(r"(?:^|: )([\w.+-]+): command not found$", re.MULTILINE)
_UNBOUND = re.compile(
    r"^(?:/[\w/]*/)?bash: (?:line \d+: )?([\w]+): unbound variable$", re.M
)
_SEPARATORS = frozenset({"|", ";", "&&", "||", "&"})
# What a fetch's exit code means when it printed nothing (``curl -s``).
_FETCH_CODES = {
    "curl": {
        6: "it could not resolve the host",
        7: "it could not connect to the server",
        22: "the server answered with an HTTP error",
        28: "it timed out",
        35: "the TLS handshake failed",
        52: "the server sent nothing",
        56: "the connection broke while receiving",
    },
    "wget": {
        4: "a network failure: it could not connect",
        5: "the TLS certificate check failed",
        8: "the server answered with an error",
    },
}
_SYNTAX = re.compile(r'File "([^"\n]+\.py)", line \d+\n(?:.*\n)*?\w*SyntaxError:')


def with_hint(
    result: str, command: str = "", tools: Mapping[str, Sequence[str]] | None = None
) -> str:
    """Return a shell result, with a hint when it says what is wrong but not
    what to do.

    ``$dir: unbound variable`` means the command used a variable no earlier
    command could set (each command runs in a fresh shell); the hint says to
    write the value itself. ``xsv: command not found`` (exit code 127) says
    which tool is missing; a small model retries it. The hint names what is
    here. A ``SyntaxError`` in a script usually means the file holds the text
    the script should print (``echo 'hello' > hello.py``); the hint says what a
    script file holds. ``awk '{s+=$4} END{print s}' sales.csv`` prints 0 or
    nothing (awk splits on blanks, a CSV line has none); the hint names ``-F,``.
    ``curl -s URL > f`` that exits 7 printed nothing; the hint says what the
    exit code means. ``find DIR -name 'db/config.yaml'`` prints nothing and
    exits 0 (-name never matches a path); the hint names -name and -path forms
    that do. A command not found that is the name of one of the model's own
    ``tools`` (name → its required arguments: ``mcp__notes__count_lines
    FILE``, ``read_file FILE``) was a tool called through the shell; the hint
    says to call that tool, with its arguments, instead of telling it to do
    without.
    """
    code, text = parse_shell_output(result)
    unset = _UNBOUND.findall(text)
    if unset:
        names = ", ".join(f"${name}" for name in dict.fromkeys(unset))
        return (
            f"{result.rstrip()}\n[{names} is not set: each command runs in a fresh "
            "shell, so write the path or value itself in the command]"
        )
    if code == 0 and text.strip() in ("", "0") and awk_over_csv(command):
        return (
            f"{result.rstrip()}\n[awk splits fields on blanks and a CSV line has "
            "none, so $N is empty: give the comma as the separator, awk -F, "
            "'NR>1{s+=$N} END{print s}' FILE, with N the column's number in the "
            "header (head -1 FILE)]"
        )
    fetcher = silent_fetch(command) if code == 0 and not text.strip() else ""
    if fetcher:
        return (
            f"{result.rstrip()}\n[the pipeline printed nothing, and its exit code "
            f"is its last program's: {fetcher} hides its own errors, so it may "
            f"have fetched nothing; run {fetcher.split()[0]} alone without "
            f"{fetcher.split()[1]} to see whether it reached the server]"
        )
    failed_fetch = fetch_failure(command, code) if not text.strip() else ""
    if failed_fetch:
        return (
            f"{result.rstrip()}\n[{failed_fetch}: nothing was fetched, so the data "
            "must come from somewhere else]"
        )
    named = slashed_name(command) if code == 0 and not text.strip() else ""
    if named:
        base = named.rstrip("/").rsplit("/", 1)[-1]
        whole = named.removeprefix("./")
        whole = whole if whole.startswith(("*", "/")) else f"*/{whole}"
        return (
            f"{result.rstrip()}\n[find's -name matches a file's own name, never a "
            f"path, so {named!r} matches nothing: use -name {shlex.quote(base)} "
            f"or -path {shlex.quote(whole)}]"
        )
    missing = list(dict.fromkeys(_NOT_FOUND.findall(text))) if code == 127 else []
    called = [name for name in missing if name in (tools or {})]
    if called:
        name = called[0]
        needs = ", ".join((tools or {})[name]) or "none"
        return (
            f"{result.rstrip()}\n[{name} is one of your tools, not a program: "
            f"call the tool {name} itself, not through the shell (its arguments: "
            f"{needs})]"
        )
    if missing:
        names = ", ".join(missing)
        # An editor or any other program a person would change a file with:
        # the model's own file tool does it without a terminal.
        edit = (
            "; change a file with the apply_edit tool"
            if "apply_edit" in (tools or {})
            else ""
        )
        return (
            f"{result.rstrip()}\n[{names} is not installed here: do the same with "
            f"standard tools (awk, sed, cut, sort, wc, grep) or python3{edit}]"
        )
    broken = _SYNTAX.search(text) if code else None
    if broken:
        return (
            f"{result.rstrip()}\n[{broken.group(1)} is not valid Python: a script "
            "file holds code, not the text it should print; to print a line it "
            "holds print('the line'). Write it with write_file, then run it again]"
        )
    return result


def silent_fetch(command: str) -> str:
    """Return "curl -s" (or "wget -q") when ``command`` pipes that silenced
    fetch into another program, else ""."""
    segments = _segments(command)
    if len(segments) < 2 or not segments[0] or segments[1:2] != [["|"]]:
        return ""
    name = os.path.basename(segments[0][0])
    flags = [a for a in segments[0][1:] if re.fullmatch(r"-[A-Za-z]+-?", a)]
    quiet = "s" if name == "curl" else "q" if name == "wget" else ""
    silenced = any(quiet in f and "S" not in f for f in flags) if quiet else False
    return f"{name} -{quiet}" if silenced else ""


def fetch_failure(command: str, code: int | None) -> str:
    """Return "curl's exit code 7 means it could not connect to the server"
    when the command's last program is a fetch whose exit code ``code`` says
    why it failed, else ""."""
    runs = [run for run in _segments(command) if run and run[0] not in _SEPARATORS]
    name = os.path.basename(runs[-1][0]) if runs else ""
    meaning = _FETCH_CODES.get(name, {}).get(code or 0, "")
    return f"{name}'s exit code {code} means {meaning}" if meaning else ""


def slashed_name(command: str) -> str:
    """Return the pattern of a find ``-name`` (``-iname``) that holds a "/",
    which matches no file (find compares it with base names only), else ""."""
    for run in _segments(command):
        if not run or os.path.basename(run[0]) != "find":
            continue
        for flag, pattern in zip(run, run[1:], strict=False):
            if flag in ("-name", "-iname") and "/" in pattern.rstrip("/"):
                return pattern
    return ""


def find_name(command: str) -> tuple[str, str]:
    """Return (DIR, NAME) of a lone ``find DIR … -name NAME`` whose NAME is a
    plain file name (no wildcard, no "/"), else ("", "")."""
    runs = _segments(command)
    if len(runs) != 1 or os.path.basename(runs[0][0]) != "find":
        return "", ""
    run = runs[0]
    start = run[1] if len(run) > 1 and not run[1].startswith("-") else ""
    for flag, pattern in zip(run, run[1:], strict=False):
        if flag == "-name" and start and not re.search(r"[*?\[\\/]", pattern):
            return start, pattern
    return "", ""


def _segments(command: str) -> list[list[str]]:
    """Return the command's words and separators as runs: [[curl, -s, URL],
    ["|"], [awk, …]]; [] when it does not split."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return []
    runs: list[list[str]] = []
    for token in tokens:
        if token in _SEPARATORS:
            runs.append([token])
        elif runs and runs[-1][0] not in _SEPARATORS:
            runs[-1].append(token)
        else:
            runs.append([token])
    return runs


def awk_over_csv(command: str) -> bool:
    """Return True when ``command`` runs awk on a .csv file with no field
    separator (no ``-F``, no ``FS=``)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return False
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _SEPARATORS:
            segment.append(token)
            continue
        if segment and os.path.basename(segment[0]) in ("awk", "gawk", "mawk"):
            args = segment[1:]
            separated = any(
                a.startswith("-F") or re.search(r"\bFS\s*=", a) for a in args
            )
            if not separated and any(a.endswith(".csv") for a in args):
                return True
        segment = []
    return False
