"""The offline paths of R1 and R2: every non-empty line is a shell command.

A task such as::

    mkdir -p out
    ls out        # expect: ^$
    & date

becomes three subtasks, sequences 1, 2 and 2 (``& `` runs with the line before),
each with the criterion "exit status 0" and, for ``# expect: <regex>``, "output
matches <regex>" as machine checks. The offline model cannot invent an
alternative, so a replan only runs the failed lines again, and fails clearly when
the directive blocks them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from roles.contracts import Criterion, PlanDirective, SubTask, SubTaskOutcome, TaskSpec
from roles.perceiver_rules import derive_task_id, is_greeting, is_identity_question
from roles.toolclass import blocked_program

OFFLINE_GREETING = (
    "Hello! No language model is configured, so artoo runs the offline model: "
    "each line you send is run as a shell command."
)
NO_ALTERNATIVE = "the offline model cannot find an alternative: "
PARALLEL_PREFIX = "& "
EXIT_ZERO = Criterion(
    criterion="exit status 0", check={"type": "exit_code", "value": 0}
)

_EXPECT = re.compile(r"(?:^|\s)#\s*expect:\s*(?P<pattern>.*?)\s*$")


class OfflinePlanError(ValueError):
    """Raised when the offline model cannot plan; the message says why."""


@dataclass(frozen=True)
class CommandLine:
    """One line of an offline task: its command and its sequence number."""

    command: str
    sequence: int


def offline_answer(raw_input: str) -> str | None:
    """Return the one-line offline explanation for a greeting, else None.

    Only a single line can be a greeting: more lines are commands to run.
    """
    text = raw_input.strip()
    if "\n" in text:
        return None
    if is_greeting(text) or is_identity_question(text):
        return OFFLINE_GREETING
    return None


def offline_spec(raw_input: str) -> TaskSpec:
    """Return the TaskSpec of an offline task: the input is the intent."""
    return TaskSpec(
        task_id=derive_task_id(raw_input),
        intent=raw_input.strip(),
        raw_input=raw_input,
    )


def command_lines(text: str) -> list[CommandLine]:
    """Return the commands of ``text`` with their sequence numbers."""
    lines: list[CommandLine] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parallel = line.startswith(PARALLEL_PREFIX)
        command = line.removeprefix(PARALLEL_PREFIX).strip() if parallel else line
        if not command:
            continue
        previous = lines[-1].sequence if lines else 0
        sequence = previous if parallel and previous else previous + 1
        lines.append(CommandLine(command, sequence))
    return lines


def criteria_for(command: str) -> list[Criterion]:
    """Return exit status 0 plus the ``# expect:`` regex check of a command."""
    match = _EXPECT.search(command)
    if match is None:
        return [EXIT_ZERO]
    pattern = match.group("pattern")
    if not pattern:
        raise OfflinePlanError(f"empty regex after '# expect:' in {command!r}")
    try:
        re.compile(pattern)
    except re.error as err:
        raise OfflinePlanError(
            f"invalid regex {pattern!r} after '# expect:' in {command!r}: {err}"
        ) from None
    matches = Criterion(
        criterion=f"output matches {pattern}",
        check={"type": "output_matches", "pattern": pattern},
    )
    return [EXIT_ZERO, matches]


def offline_subtasks(
    spec: TaskSpec,
    *,
    directive: PlanDirective | None,
    previous_outcomes: Sequence[SubTaskOutcome],
    id_factory: Callable[[], str],
) -> list[SubTask]:
    """Return the subtasks of an offline plan or replan.

    Raises OfflinePlanError when there is nothing to run or no alternative.
    """
    lines = command_lines(spec.raw_input or spec.intent)
    if not lines:
        raise OfflinePlanError("the task has no command to run")
    if directive is not None:
        lines = _lines_to_replan(lines, directive, previous_outcomes)
    return [
        SubTask(
            subtask_id=id_factory(),
            parent_task_id=spec.task_id,
            intent=line.command,
            success_criteria=criteria_for(line.command),
            context=f"command: {line.command}",
            sequence=line.sequence,
        )
        for line in _compact(lines)
    ]


def _lines_to_replan(
    lines: list[CommandLine],
    directive: PlanDirective,
    previous_outcomes: Sequence[SubTaskOutcome],
) -> list[CommandLine]:
    if "shell" in directive.blocked_tools:
        raise OfflinePlanError(
            NO_ALTERNATIVE + "the shell tool is blocked and every line of the task "
            "is a shell command"
        )
    failed = {o.intent.strip() for o in previous_outcomes if o.status == "failed"}
    chosen = [line for line in lines if line.command in failed] or lines
    blocked = [
        line.command
        for line in chosen
        if is_blocked_target(line.command, directive.blocked_targets)
        or blocked_program(line.command, directive.blocked_tools)
    ]
    if len(blocked) == len(chosen):
        raise OfflinePlanError(
            NO_ALTERNATIVE + "every failed command is blocked: " + "; ".join(blocked)
        )
    return chosen


def is_blocked_target(command: str, targets: Sequence[str]) -> bool:
    """Return True when ``command`` is one of ``targets`` (which may be cut with …)."""
    bare = _EXPECT.sub("", command).strip()
    for target in targets:
        target = target.strip()
        if target.endswith("…"):
            if command.startswith(target[:-1]) or bare.startswith(target[:-1]):
                return True
        elif target in (command, bare):
            return True
    return False


def _compact(lines: list[CommandLine]) -> list[CommandLine]:
    """Renumber sequences 1, 2, … keeping lines that ran together together."""
    numbers: dict[int, int] = {}
    for line in lines:
        numbers.setdefault(line.sequence, len(numbers) + 1)
    return [CommandLine(line.command, numbers[line.sequence]) for line in lines]
