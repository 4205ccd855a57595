"""What GGS blocks after a round: the MUST NOT tools and targets of R2's next plan.

Blocked targets are the inputs that failed. The spec (v0.8, Dynamic MUST NOT
Injection) gives ``blocked_targets`` the "specific *inputs* that failed", and
lists them as "failed query strings / commands / paths"; a subtask fails as a
whole, but its calls do not. So a target is blocked only when its own call
failed, as the canonical evidence entry shows it (``is_failed_result``): a
non-zero ``[exit code N]``, or, for a call without an exit code, an ``ERROR:``,
a ``[LAW1]`` refusal or another failure marker of ``roles.claims.evidence``. The
input is the call's target, with the text it was to write there when it needs
some (``roles.tools.specs.failed_input``): an edit whose old text was not found
blocks that edit, not the file. The
``ls`` that found the directory before the ``cat`` that failed stays usable in
the next round; blocking it would forbid the step that worked and teach R2
nothing about the one that did not. Only calls of failing subtasks count: a
matched subtask's detours were corrected in its own fast loop (R4a). Failed
targets accumulate across rounds (``GGSState.tried_targets``), and the ∇L urgency
rules choose between all of them and this round's. A command that ran a file its
own subtask wrote is not blocked: the file failed, not the command. A round
whose failing calls and their results all repeat the last round's made no
move: those calls count as failed inputs, whatever their exit code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from roles.claims.evidence import (
    WRITE_TOOLS,
    ToolCall,
    first_target,
    is_failed_call,
    parse_evidence,
    split_exit_code,
)
from roles.contracts import SubTaskOutcome
from roles.ggs.loss import GGSConfig
from roles.ggs.output import Round, dedupe
from roles.toolclass import tool_classes
from roles.tools.shell_hints import silent_fetch
from roles.tools.specs import failed_input

FailingCall = tuple[SubTaskOutcome, ToolCall]


def blocked_tools(
    rnd: Round, failing: list[FailingCall], config: GGSConfig
) -> list[str]:
    """Return the tools R2 must not use next round (logical directives only).

    break_symmetry, and change_approach while the loss worsens, block every tool of
    the failing subtasks; change_approach while the loss improves blocks only the
    tools whose calls failed (a subtask's last call when none reported an error).
    A shell call blocks the programs it ran, not the shell (``roles.toolclass``).
    """
    if rnd.directive == "break_symmetry" or (
        rnd.directive == "change_approach" and rnd.is_worsening(config)
    ):
        return dedupe(_classes(call for _, call in failing))
    if rnd.directive != "change_approach":
        return []
    by_outcome: dict[str, list[ToolCall]] = {}
    for outcome, call in failing:
        by_outcome.setdefault(outcome.subtask_id, []).append(call)
    tools = []
    for calls in by_outcome.values():
        tools += _classes([c for c in calls if is_failed_result(c)] or [calls[-1]])
    return dedupe(tools)


def _classes(calls: Iterable[ToolCall]) -> list[str]:
    return [name for call in calls for name in tool_classes(call.tool, call.args)]


def is_failed_result(call: ToolCall) -> bool:
    """Return True when the call's own result failed.

    A shell result's ``[exit code N]`` line decides: non-zero failed, zero did
    not, whatever words the output holds, except for a pipeline that starts
    with a silenced fetch and printed nothing (``curl -s URL | awk …``): its
    exit code is its last program's, and nothing shows the fetch worked. A
    call without one failed when its output is an error, a refusal or a Law 1
    denial.
    """
    code, body = split_exit_code(call.output)
    if code == 0 and call.tool == "shell":
        shown = [t for t in body.splitlines() if t.strip() and not t.startswith("[")]
        return not shown and bool(silent_fetch(str(call.args.get("command") or "")))
    if code is not None:
        return code != 0
    return is_failed_call(call)


def failed_targets(failing: list[FailingCall]) -> list[str]:
    """Return the targets of the failing subtasks' calls that failed, once each.

    A shell command that ran a file its own subtask wrote (``python hello.py``
    after writing hello.py) failed because of what was written: blocking the
    command would forbid the one step that checks the next version of the file.
    """
    written = {id(outcome): _written_paths(outcome) for outcome, _ in failing}
    return dedupe(
        failed_input(call.tool, call.args)
        for outcome, call in failing
        if is_failed_result(call) and not _runs_written(call, written[id(outcome)])
    )


# "> path", ">> path" or "tee path" in a shell command: the file it writes.
_REDIRECT = re.compile(r"(?:>>?|\btee(?:\s+-a)?)\s*['\"]?([^\s'\";&|]+)")


def _written_paths(outcome: SubTaskOutcome) -> set[str]:
    paths: set[str] = set()
    for entry in outcome.tool_calls:
        call = parse_evidence(entry)
        if call is None:
            continue
        path, command = call.args.get("path"), call.args.get("command")
        if call.tool in WRITE_TOOLS and isinstance(path, str) and path.strip():
            paths.add(path.strip())
        elif call.tool == "shell" and isinstance(command, str):
            paths.update(_REDIRECT.findall(command))
    return {p for p in paths if p not in ("/dev/null", "&1", "&2")}


def _runs_written(call: ToolCall, written: set[str]) -> bool:
    command = call.args.get("command")
    if call.tool != "shell" or not isinstance(command, str):
        return False
    return any(path in command and not _writes(command, path) for path in written)


def _writes(command: str, path: str) -> bool:
    return path in _REDIRECT.findall(command)


def call_key(call: ToolCall) -> str:
    """Return a short key of a call and what it printed: the same key in two
    rounds is the same input giving the same result."""
    text = f"{call.tool}\0{first_target(call.args)}\0{split_exit_code(call.output)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def repeated_targets(failing: list[FailingCall], last: Iterable[str]) -> list[str]:
    """Return the targets of a round that repeated the last one: every failing
    call, with what it printed, was a failing call of the last round. Such a
    round made no move, so its calls are failed inputs whatever their exit
    code (the same empty ``glob`` three rounds in a row otherwise blocks
    nothing until the run abandons)."""
    keys, seen = [call_key(call) for _, call in failing], set(last)
    if not keys or not set(keys) <= seen:
        return []
    return dedupe(failed_input(call.tool, call.args) for _, call in failing)


def blocked_targets(
    rnd: Round, latest: list[str], tried: list[str], config: GGSConfig
) -> list[str]:
    """Return the targets R2 must not reuse (environmental directives only).

    ``latest`` are this round's failed targets, ``tried`` the run's so far.
    change_path, and refine while the loss worsens, block every failed target of
    the run; refine while the loss improves blocks only this round's.
    """
    if rnd.directive == "change_path" or (
        rnd.directive == "refine" and rnd.is_worsening(config)
    ):
        return list(tried)
    return list(latest) if rnd.directive == "refine" else []
