"""Machine checks: R4a's verdict on a criterion that carries a ``check``, in code.

The check types and their parameters (DESIGN §6)::

    {"type": "exit_code", "value": 0}
    {"type": "output_contains", "value": "ok"}
    {"type": "output_matches", "pattern": "hel+o"}      # re.search, multiline
    {"type": "file_exists", "path": "out/report.md"}    # relative to the workspace
    {"type": "json_field", "path": "a.b.0", "value": 3} # no "value": must exist

The exit code is read from the last shell call: the shell tool's result starts
with ``[exit code N]`` (``roles.tools.shell``). Output checks look at the
ExecutionResult's output, then at the tool-call evidence (tool output is the
ground truth the executor's summary may leave out); the ``[exit code N]`` line
itself is never part of the text matched, nor the error report of a failed call
(``roles.claims.facts.is_error_report``: a traceback quotes the line that failed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roles.claims.facts import (
    appears,
    evidence_text,
    last_exit_code,
    output_text,
    spaced,
    spaced_regex,
    texts,
)
from roles.contracts import ExecutionResult
from roles.jsontypes import nested, of_type, output_json, type_named
from roles.llm.jsonparse import JSONExtractError
from roles.patterns import (
    ANY_TEXT,
    NEVER_MATCHES,
    names_no_format,
    read_placeholder,
    undelimited,
    written_as_regex,
)

QUOTE = 120


@dataclass(frozen=True)
class CheckResult:
    """Whether a check passed, and the evidence that says why."""

    passed: bool
    evidence: str


def evaluate_check(
    check: dict[str, Any],
    result: ExecutionResult,
    *,
    workspace: Path,
    request: str = "",
) -> CheckResult:
    """Evaluate one machine check against an ExecutionResult.

    ``request`` is the user's; what a plan's check may demand of it is decided
    before the plan runs (``roles.planning.stated``): a check that reaches
    here is read as written.
    """
    return _evaluate(check, result, workspace)


def _evaluate(
    check: dict[str, Any], result: ExecutionResult, workspace: Path
) -> CheckResult:
    kind = check.get("type") if isinstance(check, dict) else None
    handlers = {
        "exit_code": _exit_code,
        "output_contains": _output_contains,
        "output_matches": _output_matches,
        "file_exists": _file_exists,
        "json_field": _json_field,
    }
    if kind not in handlers:
        return CheckResult(False, f"invalid check: unknown type {kind!r}")
    try:
        return handlers[kind](check, result, workspace)
    except _BadCheck as err:
        return CheckResult(False, f"invalid {kind} check: {err}")


class _BadCheck(ValueError):
    """A check whose parameters are missing or malformed."""


def _exit_code(check, result, _workspace) -> CheckResult:
    want = _param(check, "value", int)
    got = last_exit_code(result)
    if got is None:
        return CheckResult(False, "no shell call recorded an exit code")
    verdict = "matches" if got == want else f"expected {want}"
    return CheckResult(got == want, f"exit code {got} ({verdict})")


def _output_contains(check, result, _workspace) -> CheckResult:
    want = _param(check, "value", str)
    for loose in (False, True):
        needle = spaced(want) if loose else want
        for where, text in texts(result, loose=loose, reports=False):
            if needle in text:
                said = f"{where} contains {want!r}: {_around(text, needle)}"
                return _shown(result, where, needle, said)
    if written_as_regex(want):
        read = _output_matches({"pattern": want}, result, _workspace)
        return CheckResult(read.passed, f"{read.evidence} (the value read as a regex)")
    head = _quote(output_text(result.output))
    return CheckResult(False, f"{want!r} not found in the output ({head}) or evidence")


# The example field of the plan prompt's json_field check ("a.b"), which a
# small model copies as it stands.
EXAMPLE_FIELDS = ("a.b", "a.b.0", "...", "")


def _output_matches(check, result, _workspace) -> CheckResult:
    pattern, flags = undelimited(_param(check, "pattern", str))
    if names_no_format(pattern):
        return _any_output(f"/{pattern}/", result)
    pattern = read_placeholder(pattern)
    try:
        regex = re.compile(pattern, re.MULTILINE | flags)
    except re.error as err:
        raise _BadCheck(f"pattern {pattern!r} is not a valid regex ({err})") from None
    if all(regex.fullmatch(text) for text in ANY_TEXT):
        # ".*" matches the whole claim, which no tool prints word for word.
        return _any_output(f"/{pattern}/", result)
    if NEVER_MATCHES.search(pattern):
        return _any_output(f"/{pattern}/ (it can never match)", result)
    refused, claimed = None, ""
    for loose, candidate in ((False, regex), (True, spaced_regex(pattern, flags))):
        shown = texts(result, loose=loose, reports=False) if candidate else ()
        for where, text in shown:
            match = candidate.search(text)
            if not match:
                continue
            found = match.group(0)
            said = f"{where} matches /{pattern}/: {found!r}"
            if refused is None:
                checked = _shown(result, where, found, said, whole=True)
                if checked.passed or where != "output":
                    return checked
                refused, claimed = checked, found
            elif where != "output" and found.strip() and found.strip() in claimed:
                # ".*x.*" takes a whole claim line, which no tool prints; a
                # tool output that matches and that the claim quotes shows it.
                return CheckResult(True, f"{said} (the claim quotes it)")
    if refused is not None:
        return refused
    head = _quote(output_text(result.output))
    return CheckResult(False, f"no match for /{pattern}/ in the output ({head})")


def _any_output(named: str, result: ExecutionResult) -> CheckResult:
    said = output_text(result.output).strip()
    if said:
        return CheckResult(True, f"{named} names no format; output: {_quote(said)}")
    return CheckResult(False, f"{named} names no format and the output is blank")


def _shown(
    result: ExecutionResult,
    where: str,
    found: str,
    said: str,
    *,
    whole: bool = False,
) -> CheckResult:
    """Pass a match in the executor's claim only when a tool output shows it too.

    The claimed output is not evidence: a value the model wrote that no tool
    returned (an invented count, a made-up file name) fails the check.
    """
    shown = evidence_text(result, reports=False)
    value = found.strip()
    # A value the regex took from the claim must stand whole in a tool output,
    # under either spacing of its key-value signs.
    pairs = ((value, shown), (spaced(value), spaced(shown)))
    if where != "output" or any(
        appears(v, text) if whole else v in text for v, text in pairs
    ):
        return CheckResult(True, said)
    return CheckResult(
        False,
        f"the claimed output has {found!r} but no tool output shows it; the claim "
        "is not evidence",
    )


def _file_exists(check, _result, workspace: Path) -> CheckResult:
    raw = _param(check, "path", str)
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else Path(workspace) / path
    if path.exists():
        return CheckResult(True, f"{path} exists")
    return CheckResult(False, f"no such file: {path}")


def _json_field(check, result, _workspace) -> CheckResult:
    dotted = _param(check, "path", str)
    try:
        value = output_json(result.output)
    except (JSONExtractError, ValueError) as err:
        if dotted.strip() in EXAMPLE_FIELDS:
            return _any_output(f"field {dotted.strip()!r}", result)
        return CheckResult(False, f"the output is not JSON ({err})")
    keys = dotted.split(".")
    if len(keys) == 1 and isinstance(value, dict) and keys[0] not in value:
        # A small executor wraps its answer ({"result": {"lines": 58}}): one
        # field of that name, at any depth, is the field asked for.
        found = nested(value, keys[0])
        if len(found) == 1:
            value = {keys[0]: found[0]}
    for key in keys:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.lstrip("-").isdigit() and _in(value, key):
            value = value[int(key)]
        elif dotted.strip() in EXAMPLE_FIELDS:
            # The plan prompt's example field, copied: it names no field here.
            return _any_output(f"field {dotted.strip()!r}", result)
        else:
            return CheckResult(False, f"the output has no field {dotted!r}")
    if "value" not in check:
        return CheckResult(True, f"field {dotted!r} is present: {_quote(repr(value))}")
    want = check["value"]
    if value == want:
        return CheckResult(True, f"field {dotted!r} equals {want!r}")
    kind = type_named(want)
    if kind is not None:
        met = of_type(value, kind)
        said = ("is" if met else "is not") + (" an" if kind[0] in "aio" else " a")
        return CheckResult(met, f"field {dotted!r} {said} {kind}: {value!r}")
    got = _quote(repr(value))
    return CheckResult(False, f"field {dotted!r} is {got}, not {want!r}")


def _in(values: list, key: str) -> bool:
    return -len(values) <= int(key) < len(values)


def _param(check: dict, name: str, kind: type) -> Any:
    if name not in check:
        raise _BadCheck(f"missing parameter {name!r}")
    value = check[name]
    if kind is int and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _BadCheck(f"parameter {name!r} must be {kind.__name__}, got {value!r}")
    return value


def _quote(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= QUOTE else text[:QUOTE] + "…")


def _around(text: str, needle: str) -> str:
    at = text.find(needle)
    return _quote(text[max(at - 40, 0) : at + len(needle) + 40])
