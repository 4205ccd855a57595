"""What a claim states and where a tool showed it: the facts R4a and R4b weigh.

``output_text`` is an ExecutionResult output as text (without the shell's
``[exit code N]`` line), ``last_exit_code`` the exit code of the last shell
call. ``FACT`` finds what a claim may not state unless a tool showed it:
numbers, paths and file names; ``appears`` says whether one stands in a text
as a whole token.
"""

from __future__ import annotations

import json
import re
from typing import Any

from roles.claims.evidence import parse_evidence
from roles.contracts import ExecutionResult
from roles.tools.shell import parse_shell_output


def output_text(output: Any) -> str:
    """Return an ExecutionResult output as text, without the exit-code line."""
    if output is None:
        return ""
    if not isinstance(output, str):
        return json.dumps(output, ensure_ascii=False, default=str)
    return parse_shell_output(output)[1]


def last_exit_code(result: ExecutionResult) -> int | None:
    """Return the exit code of the last shell call, or of the output; else None."""
    for entry in reversed(result.tool_calls):
        call = parse_evidence(entry)
        if call is not None and call.tool == "shell":
            code, _ = parse_shell_output(call.output)
            if code is not None:
                return code
            break
    if isinstance(result.output, str):
        return parse_shell_output(result.output)[0]
    return None


# What a claim may not state unless a tool showed it: numbers, paths, file names.
# A number with thousands separators (10,000) is one fact, shown by 10,000 or 10000.
GROUPED = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"
FACT = re.compile(
    rf"(?<![\w.])(?:{GROUPED}|\d+(?:\.\d+)?|[\w.-]*/[\w./-]+|[\w-]+\.[A-Za-z]\w{{0,4}})"
    r"(?![\w])"
)


def unshown_facts(result: ExecutionResult, known: str = "") -> list[str]:
    """Return the numbers and paths the claimed output states that no evidence
    entry (tool arguments and output) nor ``known`` (the subtask's own text) has.
    """
    sources = "\n".join([known, *result.tool_calls])
    claim = output_text(result.output)
    return [f for f in dict.fromkeys(FACT.findall(claim)) if not appears(f, sources)]


def appears(value: str, text: str) -> bool:
    """Return True when ``value`` stands in ``text`` as a whole token ("24" is not
    in "2024"), or as a substring when it is not a single word or number; a
    grouped number (``10,000``) also stands as its digits (``10000``)."""
    if not value:
        return False
    if re.fullmatch(GROUPED, value):
        return value in text or appears(value.replace(",", ""), text)
    if re.fullmatch(r"[\w.]+", value):
        return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text) is not None
    return value in text


def texts(
    result: ExecutionResult, *, loose: bool = False, reports: bool = True
) -> list[tuple[str, str]]:
    """Return ``(where, text)`` pairs: the output first, then each tool output;
    with ``loose``, each text without the blanks around ``=`` and ``:``; without
    ``reports``, not the output of a call that failed with an error report."""
    texts = [("output", output_text(result.output))]
    for number, entry in enumerate(result.tool_calls, start=1):
        call = parse_evidence(entry)
        if call is not None and (reports or not is_error_report(call.output)):
            texts.append(
                (f"tool call {number} ({call.tool})", output_text(call.output))
            )
    return [(where, spaced(text)) for where, text in texts] if loose else texts


# What a failed command prints about its failure: a Python traceback or its
# error line, a compiler's "file:line: error", a program's "prog: …: <error>".
ERROR_REPORT = re.compile(
    r"^Traceback \(most recent call last\):|^\s*File \"[^\"\n]+\", line \d+"
    r"|^\w+(?:Error|Exception): |^[\w./+-]+:(?:\d+:)* (?:fatal )?error: "
    r"|^[\w./+-]+: (?:line \d+: )?.*?(?:No such file or directory|Permission denied"
    r"|cannot access|cannot open|command not found|syntax error)",
    re.MULTILINE,
)


def is_error_report(output: str) -> bool:
    """Return True when a call exited non-zero and its output reports the error.

    The report quotes what failed: a traceback shows the source line
    ``print(hello from artoo)`` of the script that could not run, so the text
    it should have printed stands in the output of the run that did not print
    it. An output check is never met by such a report. A command that failed
    without one (``grep -c`` printing 0 with exit code 1, ``diff`` printing
    the lines that differ) keeps its output.
    """
    code, body = parse_shell_output(output)
    return code not in (None, 0) and ERROR_REPORT.search(body) is not None


# How a small model guesses a key-value line: "port=8437" or "port: 8437" for
# "port = 8437". The second try of an output check compares both sides with each
# "=" or ":" and the blanks around it written as one "="; the spelling of a
# key-value sign is not its meaning.
_KEY_VALUE = re.compile(r"[ \t]*[=:][ \t]*")
_PATTERN_SIGN = re.compile(r"(?<![\\(?<!])[ ]*[=:][ ]*")


def spaced(text: str) -> str:
    """Return ``text`` with each ``=`` or ``:`` and its blanks as one ``=``."""
    return _KEY_VALUE.sub("=", text)


def spaced_regex(pattern: str, flags: int) -> re.Pattern | None:
    """Return the pattern for the second try (each literal ``=`` or ``:`` and
    its blanks as one ``=``), or None when that is no valid regex."""
    try:
        return re.compile(_PATTERN_SIGN.sub("=", pattern), re.MULTILINE | flags)
    except re.error:
        return None


def evidence_text(result: ExecutionResult, *, reports: bool = True) -> str:
    """Return every tool output of the result's evidence, joined (without
    ``reports``, not the error reports of failed calls)."""
    shown = texts(result, reports=reports)
    return "\n".join(text for where, text in shown if where != "output")
