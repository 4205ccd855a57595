"""A project's verification commands, run in the sandbox at the last commit.

``roles.projects.verification`` decides what a milestone's "done" needs; this
module only runs the commands and reads the repository. Each command runs as a
task's shell command does, in a fresh sandbox over the project's directory
(copy-on-write: its changes are discarded), and only when the directory is
exactly the last commit: no uncommitted change, HEAD at ``last_commit``. With
no working sandbox nothing runs (a verification is never run unconfined on the
host), and each command is reported as not run, with why.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from artoo_web import projectrepo, runtime
from artoo_web.models import Project
from roles.projects.state import WORKING
from roles.projects.verification import (
    CommandResult,
    protected_files,
    regressions,
    tail,
)
from roles.tools.errors import ToolError
from roles.tools.sandbox import Sandbox, remove_tree
from roles.tools.shell import parse_shell_output

log = logging.getLogger(__name__)

OUTPUT_CAP = 200_000


def run_checks(
    project: Project, commands: list[str]
) -> tuple[str, list[CommandResult]]:
    """Return the last commit and each command's result there."""
    path, commit = Path(project.directory), project.last_commit
    why = _not_at_commit(path, commit) or _no_sandbox()
    if why:
        return commit, [CommandResult(command=c, output=why) for c in commands]
    return commit, _run_all(project, path, commands)


def broken_by_work(project: Project) -> list[str]:
    """Return the current milestone's commands a task's uncommitted work broke.

    Each command runs over the directory as the task left it; one that fails
    there runs again over the files of the last commit (exported from git into
    a scratch directory, so the work is never touched). A command that passed
    at the last commit and fails on the work is broken by it
    (``verification.regressions``). Without a working sandbox nothing runs and
    nothing is found.
    """
    commands = project.load_state().commands()
    commit = project.last_commit
    if not commands or not commit or _no_sandbox():
        return []
    after = _run_all(project, Path(project.directory), commands)
    failing = [r.command for r in after if r.exit_code not in (None, 0)]
    if not failing:
        return []
    with _exported(project, commit) as base:
        if base is None:
            return []
        before = _run_all(project, base, failing)
    return regressions(before, after, commit)


@contextmanager
def _exported(project: Project, commit: str) -> Iterator[Path | None]:
    """Yield a scratch directory holding the files of ``commit``, or None."""
    scratch = settings.SANDBOX_DIR / f"verify-{project.id}-base"
    remove_tree(scratch)
    try:
        scratch.mkdir(parents=True)
        projectrepo.export(Path(project.directory), commit, scratch)
    except (projectrepo.DirectoryError, OSError) as error:
        log.warning("project %s: last commit not exported: %s", project.id, error)
        remove_tree(scratch)
        yield None
        return
    try:
        yield scratch
    finally:
        remove_tree(scratch)


def _run_all(project: Project, workspace: Path, commands: list[str]):
    """Return each command's result in a fresh sandbox over ``workspace``."""
    policy = runtime.sandbox_policy()
    key = f"verify-{project.id}"
    sandbox = Sandbox(policy, run_key=key, workspace=workspace, own_workspace=False)
    try:
        return [_run(sandbox, command) for command in commands]
    finally:
        runtime.discard_sandbox_state(key)


def _run(sandbox: Sandbox, command: str) -> CommandResult:
    try:
        done = sandbox.run(
            command,
            timeout_s=settings.ARTOO_SHELL_TIMEOUT_S,
            output_cap=OUTPUT_CAP,
            cancelled=lambda: False,
            track=lambda *_: None,
            kill_grace_s=1.0,
        )
    except ToolError as error:
        return CommandResult(command=command, output=f"not run: {error}")
    try:
        code, text = parse_shell_output(done.output)
    finally:
        done.discard()  # a verification changes nothing
    return CommandResult(command=command, exit_code=code, output=tail(text))


def _not_at_commit(path: Path, commit: str) -> str:
    try:
        if not commit or projectrepo.head(path) != commit:
            return f"not run: the directory is not at the last commit {commit[:12]}"
        if projectrepo.changed_files(path, include_deleted=True):
            return "not run: the directory has changes the last commit does not hold"
    except (projectrepo.DirectoryError, OSError) as error:
        return f"not run: {error}"
    return ""


def _no_sandbox() -> str:
    if settings.ARTOO_SANDBOX != "on":
        return (
            "not run: verification commands run only in the sandbox, and "
            "ARTOO_SANDBOX is off"
        )
    problem = runtime.sandbox_problem(runtime.sandbox_policy())
    return f"not run: the sandbox does not work here ({problem})" if problem else ""


def protected(project: Project) -> list[str]:
    """Return the files of the last commit no task of the current milestone may
    change: those its verification commands name, and its declared ones."""
    state = project.load_state()
    if state.phase not in WORKING or not project.last_commit:
        return []
    try:
        tracked = projectrepo.tracked(Path(project.directory), project.last_commit)
    except (projectrepo.DirectoryError, OSError) as error:
        log.warning("project %s: tracked files unknown: %s", project.id, error)
        return []
    return protected_files(state.commands(), state.protected_paths(), tracked)


def protected_changes(project: Project) -> list[str]:
    """Return the protected files the work in the directory changed or deleted."""
    files = protected(project)
    if not files:
        return []
    try:
        changed = projectrepo.changed_files(
            Path(project.directory), include_deleted=True
        )
    except (projectrepo.DirectoryError, OSError):
        return []
    return [name for name in changed if name in files]
