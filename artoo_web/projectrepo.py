"""A project's working directory: where it may be, its git repository, its changes.

A project works in a directory under ``ARTOO_ALLOWED_PATHS`` or in one created
for it in the owner's workspace area. The directory is a git repository (one is
initialised with the existing content as its first commit when it is not), and
each task's work is committed when the task is done, so the files a task's Run
changed are what ``git status`` shows afterwards. Git runs with the user's
hooks and signing off: a project's repository never runs code of its own here.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from django.conf import settings

from artoo_web import runtime
from roles.tools import access

GIT_TIMEOUT_S = 30
GIT_OPTIONS = (
    "-c",
    "user.name=artoo",
    "-c",
    "user.email=artoo@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "safe.directory=*",
)


class DirectoryError(ValueError):
    """The directory cannot hold a project; the message says why."""


def git(directory: Path, *args: str) -> str:
    """Run one git command in ``directory``; return its output or raise."""
    done = subprocess.run(
        ["git", *GIT_OPTIONS, "-C", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise DirectoryError(f"git {args[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout


def allowed_directory(text: str) -> Path:
    """Return the directory ``text`` names if a project may work there.

    It must be an absolute path inside ``ARTOO_ALLOWED_PATHS``, clear of the
    app's own files, and a directory (or not exist yet: it is created).
    """
    if "\x00" in text or len(text) > 1000:
        raise DirectoryError(
            "The directory must be a path of at most 1,000 characters."
        )
    path = Path(text)
    if not path.is_absolute():
        raise DirectoryError("The directory must be an absolute path.")
    path = path.resolve()
    roots = settings.ARTOO_ALLOWED_PATHS
    if not any(path.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(r) for r in roots) or "none are configured"
        raise DirectoryError(
            f"{path} is outside the allowed paths (ARTOO_ALLOWED_PATHS: {allowed})."
        )
    if any(path.is_relative_to(hidden) for hidden in runtime.hidden_paths()):
        raise DirectoryError(f"{path} holds artoo's own files; choose another.")
    if path.exists() and not path.is_dir():
        raise DirectoryError(f"{path} is not a directory.")
    _check_sandbox_enters(path, roots)
    return path


def _check_sandbox_enters(path: Path, roots) -> None:
    """Refuse a directory the sandbox's user may not enter: no command of the
    project could run there (the sandbox cannot bind it) and its file tools
    refuse it too."""
    if settings.ARTOO_SANDBOX != "on":
        return
    policy = runtime.sandbox_policy()
    closed = access.for_policy(policy, tuple(roots)).closed(
        path, access.READ | access.SEARCH
    )
    if closed is not None:
        raise DirectoryError(
            f"The sandbox's user (uid {policy.uid}) may not enter {closed}, so no "
            f"command could run in {path}; open it to that user or choose another."
        )


def created_directory(owner_id) -> Path:
    """Return a new directory for a project in the owner's workspace area."""
    path = runtime.user_area(owner_id) / f"project-{uuid.uuid4().hex[:12]}"
    path.mkdir(parents=True)
    return path


def prepare(path: Path) -> None:
    """Make ``path`` a clean git repository, creating it if needed.

    A repository with uncommitted changes is refused: its changes would be
    taken for the first task's work.
    """
    path.mkdir(parents=True, exist_ok=True)
    if (path / ".git").exists():
        if changed_files(path, include_deleted=True):
            raise DirectoryError(
                f"{path} has uncommitted changes; commit or stash them first."
            )
        return
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", "artoo: project start")


def changed_files(path: Path, *, include_deleted: bool = False) -> list[str]:
    """Return the files changed since the last commit, relative to ``path``."""
    out = git(path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = out.split("\0")
    files, index = [], 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        code, name = entry[:2], entry[3:]
        if "R" in code or "C" in code:
            index += 1  # the original path of a rename or copy follows
        if "D" in code and not include_deleted:
            continue
        files.append(name)
    return files


def commit(path: Path, message: str) -> bool:
    """Commit every change in ``path``; return False when there was none."""
    if not changed_files(path, include_deleted=True):
        return False
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message[:500])
    return True
