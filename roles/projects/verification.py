"""Done by verification only: what a milestone's "done" needs, and what it protects.

A milestone carries ``verify`` commands the project runs itself (the
repository's tests, a script): the ScopeAgent's for that milestone, with the
project's own (given when it was created) before them. The Assessor's
``milestone_complete`` is not enough: the milestone is done, and the project
complete, only when every command exits 0 in the sandbox at the last commit
(``refusal``). A milestone with no command cannot be accepted as done.

The files a command names (``sh tests/notes.sh`` names ``tests/notes.sh``; a
directory, ``pytest tests``, names every file below it) and the declared
``protected`` paths are outside the Implementor's write set once they are
committed (``protected_files``); one not yet committed may be written by the
task that writes it, after which it is protected too. A command or path that
is empty, too long, on several lines or outside the repository is refused
with a ``ValueError`` naming it, so a bad config changes nothing::

    {"description": "User can add notes", "verify": ["sh tests/notes.sh"],
     "protected": ["tests/"]}
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Iterable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from roles.contract_base import Contract

if TYPE_CHECKING:
    from roles.projects.contracts import Scope

MAX_COMMANDS = 5
COMMAND_CHARS = 300
MAX_PROTECTED = 20
PATH_CHARS = 200
OUTPUT_CHARS = 600
# Words of a command that name no file of the repository, or all of it.
NOT_PATHS = frozenset({"", ".", "./", "/", "*"})
# A word written as a file's path: a directory part or a file extension.
PATH_WORD = re.compile(r"[\w.+-]*/[\w./+-]*|[\w+-][\w.+-]*\.[A-Za-z][A-Za-z0-9]{0,7}")


def check_command(value: str) -> str:
    """Return a verification command stripped; raise ValueError when it is bad."""
    text = value.strip()
    if not text:
        raise ValueError("a verification command must not be empty")
    if len(text) > COMMAND_CHARS:
        raise ValueError(
            f"a verification command is at most {COMMAND_CHARS} characters, "
            f"not {len(text):,}"
        )
    if any(ch in text for ch in "\x00\n\r"):
        raise ValueError("a verification command is one line, without NUL")
    return text


def check_path(value: str) -> str:
    """Return a protected path relative to the repository; raise if it is bad."""
    text = value.strip()
    while text.startswith("./"):
        text = text[2:]
    if text in NOT_PATHS:
        raise ValueError(f"a protected path must name files, not {value!r}")
    if len(text) > PATH_CHARS or "\x00" in text or "\n" in text:
        raise ValueError(
            f"a protected path is one line of at most {PATH_CHARS} characters"
        )
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"a protected path lies inside the repository: {value!r}")
    return text.rstrip("/")


def _listed(value: Any) -> Any:
    """Accept one command or path given bare, as a list of one."""
    return [value] if isinstance(value, str) else value


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


Command = Annotated[str, AfterValidator(check_command)]
ProtectedPath = Annotated[str, AfterValidator(check_path)]
Commands = Annotated[
    list[Command],
    BeforeValidator(_listed),
    Field(max_length=MAX_COMMANDS),
    AfterValidator(_unique),
]
Protected = Annotated[
    list[ProtectedPath],
    BeforeValidator(_listed),
    Field(max_length=MAX_PROTECTED),
    AfterValidator(_unique),
]


class CommandResult(Contract):
    """One verification command at a commit: its exit code (None: it did not
    run, ``output`` says why) and the tail of its output."""

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int | None = None
    output: str = ""

    @property
    def passed(self) -> bool:
        """Return True when the command ran and exited 0."""
        return self.exit_code == 0


def tail(text: str, limit: int = OUTPUT_CHARS) -> str:
    """Return the end of a command's output, where its verdict usually is."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def named_paths(command: str) -> list[str]:
    """Return the words of ``command`` that may name a file or a directory."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    paths = []
    for word in words:
        if word.startswith("--") and "=" in word:
            word = word.split("=", 1)[1]  # --rootdir=tests
        while word.startswith("./"):
            word = word[2:]
        word = word.split("::", 1)[0].rstrip("/")  # pytest's file::test
        if word not in NOT_PATHS and not word.startswith(("-", "/")):
            paths.append(word)
    return paths


def file_words(command: str) -> list[str]:
    """Return the words of ``command`` that are written as a file's path: with
    a ``/`` or a file extension (``tests/check.sh``, ``test_greet.py``), not a
    program or a module name (``python3``, ``unittest``)."""
    return [word for word in named_paths(command) if PATH_WORD.fullmatch(word)]


def ungrounded(paths: Iterable[str], present: Collection[str], asked: str) -> list[str]:
    """Return the paths that are neither in the repository nor in the request.

    ``present`` holds the repository's files and directories, relative to it;
    ``asked`` is the user's request. A path an agent wrote that is in neither
    is a guess (an example's shape copied), not the user's outcome.
    """
    return [
        path
        for path in paths
        if path.rstrip("/") not in present and path.rstrip("/") not in asked
    ]


def grounded_scope(
    scope: Scope, present: Collection[str], asked: str
) -> tuple[Scope, list[str]]:
    """Return ``scope`` without the verify commands and protected paths the
    ScopeAgent guessed (``ungrounded``), and what was dropped, each said."""
    milestones, dropped = [], []
    for milestone in scope.milestones:
        verify, protected = [], []
        for command in milestone.verify:
            guessed = ungrounded(file_words(command), present, asked)
            if guessed:
                dropped.append(f"`{command}` (names {', '.join(guessed)})")
            else:
                verify.append(command)
        for path in milestone.protected:
            if ungrounded([path], present, asked):
                dropped.append(f"protected path {path}")
            else:
                protected.append(path)
        update = {"verify": verify, "protected": protected}
        milestones.append(milestone.model_copy(update=update))
    return scope.model_copy(update={"milestones": milestones}), dropped


def protected_files(
    commands: Iterable[str], declared: Iterable[str], tracked: Iterable[str]
) -> list[str]:
    """Return the committed files the Implementor may not change.

    ``tracked`` are the files of the last commit: a file a command names or a
    declared path holds (itself, or a directory above it) is protected; one not
    committed yet is not, so the task that writes it may.
    """
    roots = {*(p for c in commands for p in named_paths(c)), *declared}
    return sorted(
        name
        for name in set(tracked)
        if any(name == root or name.startswith(root + "/") for root in roots)
    )


def touched(changed: Iterable[str], protected: Collection[str]) -> list[str]:
    """Return the changed files that are protected, in the order they came."""
    return [name for name in dict.fromkeys(changed) if name in protected]


def no_command(milestone_number: int) -> str:
    """Return why a milestone without a verification command is not done."""
    return (
        f"milestone {milestone_number} has no verification command, so it cannot "
        "be accepted as done: it needs a command the project runs itself (its "
        "tests, a script) that passes at the commit"
    )


def refusal(
    milestone_number: int,
    commands: Sequence[str],
    results: Sequence[CommandResult],
    commit: str = "",
) -> str:
    """Return why the milestone is not done at ``commit``; "" when it is.

    Every command must have run and exited 0; no command at all is a refusal.
    """
    if not commands:
        return no_command(milestone_number)
    ran = {result.command: result for result in results}
    at = f" at commit {commit[:12]}" if commit else ""
    for command in commands:
        result = ran.get(command)
        if result is None:
            return f"verification{at} did not run `{command}`"
        if not result.passed:
            how = (
                f"exited {result.exit_code}"
                if result.exit_code is not None
                else "did not run"
            )
            output = f": {tail(result.output, 200)}" if result.output.strip() else ""
            return f"verification failed{at}: `{command}` {how}{output}"
    return ""


def regressions(
    before: Sequence[CommandResult], after: Sequence[CommandResult], commit: str = ""
) -> list[str]:
    """Return why each command that passed at ``commit`` fails on a task's work.

    ``before`` are the commands' results at the last commit, ``after`` on the
    work a task left over it. A command that failed there already, or that did
    not run on either side, says nothing of the task: only one that passed
    before and ran and failed after is the task's doing.
    """
    passed = {result.command for result in before if result.passed}
    at = f" at the last commit {commit[:12]}" if commit else " at the last commit"
    found = []
    for result in after:
        if result.command in passed and result.exit_code not in (None, 0):
            output = f": {tail(result.output, 300)}" if result.output.strip() else ""
            found.append(
                f"`{result.command}` passed{at} and fails with this task's "
                f"changes (exit {result.exit_code}){output}"
            )
    return found


def claim_note(milestone_number: int, commands: Sequence[str]) -> str:
    """Return what the Assessor is told of a claim's verification."""
    if not commands:
        return no_command(milestone_number) + "."
    listed = "; ".join(f"`{c}`" for c in commands)
    return (
        f"Judge the milestone complete only if its work is there: it is then "
        f"done only if these commands pass at the commit: {listed}."
    )
