"""A project's working directory: where it may be, its git repository, its changes.

A project works in a directory under ``ARTOO_ALLOWED_PATHS`` or in one created
for it in the owner's workspace area. The directory is a git repository (one is
initialised with the existing content as its first commit when it is not), and
each task's work is committed when the task is done, so the files a task's Run
changed are what ``git status`` shows afterwards. An attempt whose work is not
kept is ``discard``-ed: its work tree is kept as a commit under
``refs/artoo/discarded/<dispatch id>`` (parented on the last commit, so
``git show`` of it is the attempt's whole diff), then the directory is reset to
the last commit, which removes the files it created. Ignored files, and
anything else the kept commit does not hold, are never touched.

A project's repository is written by the commands of its tasks (and by the
directory's owner), so git here never runs a program the repository names
(``git``): no system or global config; hooks, fsmonitor, signing, signature
checks, automatic gc and maintenance off; no submodule recursion; external
diff drivers and text conversion off where a diff is shown; and every filter
driver the repository's config defines (``filter.<name>.clean``, ``smudge``,
``process``) overridden with none before the command reads a file. ``.git``
must be a directory of its own, holding no symlink and no ``commondir`` (a
``gitdir:`` file or a link could have git read and write anywhere on the
host), and git runs with the rights of the directory's owner, never more: a
worker running as root drops to that user.
"""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import tarfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from artoo_web import runtime
from roles.tools import access
from roles.tools.beneath import NotBeneath, Root, as_owner

GIT_TIMEOUT_S = 30
GIT_OPTIONS = (
    "-c",
    "user.name=artoo",
    "-c",
    "user.email=artoo@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "safe.directory=*",
    "-c",
    "core.quotePath=false",
)
# Only these reach git from the worker's environment.
GIT_ENV = {
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
FILTER_KEYS = ("clean", "smudge", "process")
MAX_FILTERS = 100
DISCARDED_REF = "refs/artoo/discarded/"
SHOW_BYTES = 100_000
NEW_FILES = 200
EXPORT_BYTES = 200 * 1024 * 1024
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
HASH = re.compile(r"[0-9a-f]{40}")


class DirectoryError(ValueError):
    """The directory cannot hold a project; the message says why."""


def git(directory: Path, *args: str, limit: int | None = None) -> str:
    """Run one git command in ``directory``; return its output or raise.

    With ``limit``, return at most that many bytes of the output, decoded (and
    a line saying it was cut), never holding more of it in memory.
    """
    command, options = _git(directory, args)
    if limit is not None:
        return _git_head(command, options, args[0], limit)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=GIT_TIMEOUT_S,
        check=False,
        **options,
    )
    if done.returncode != 0:
        raise DirectoryError(f"git {args[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout


def _git(directory: Path, args: tuple[str, ...]) -> tuple[list[str], dict]:
    """Return the argv and the ``subprocess`` options of one safe git command."""
    directory = Path(directory)
    try:
        owner = directory.lstat()
    except OSError as error:
        raise DirectoryError(f"{directory}: {error.strerror or error}") from None
    options = {"env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **GIT_ENV}}
    if os.geteuid() == 0 and owner.st_uid != 0:
        options.update(user=owner.st_uid, group=owner.st_gid, extra_groups=[])
    command = ["git", *GIT_OPTIONS, "-C", str(directory)]
    if args[0] == "init":
        return [*command, *args], options
    dot_git = directory / ".git"
    if not dot_git.is_dir() or dot_git.is_symlink():
        raise DirectoryError(
            f"{directory} is not a repository of its own: its .git is missing, "
            "a symlink or a gitdir file."
        )
    _check_self_contained(dot_git)
    command += [f"--git-dir={dot_git}", f"--work-tree={directory}"]
    options["env"].update(_no_filters(command, options))
    return [*command, *args], options


def _check_self_contained(dot_git: Path) -> None:
    """Refuse a git directory that leads elsewhere: a symlink inside it (git
    appends to ``logs/HEAD``, writes under ``objects/``) or a ``commondir``
    (another repository's objects, refs and config) would have git read and
    write outside the project's directory."""
    if (dot_git / "commondir").exists():
        raise DirectoryError(f"{dot_git} shares another repository (commondir).")
    pending = [str(dot_git)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    raise DirectoryError(
                        f"{entry.path} is a symlink: a project's .git holds none."
                    )
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)


def _no_filters(command: list[str], options: dict) -> dict[str, str]:
    """Return the environment that overrides each filter driver the
    repository's config defines with none (``GIT_CONFIG_KEY_<n>``: a driver's
    name may hold any character, ``=`` too, which ``-c`` would split at)."""
    listed = subprocess.run(
        [*command, "config", "-z", "--name-only", "--get-regexp", r"^filter\."],
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
        **options,
    )
    if listed.returncode not in (0, 1):  # 1: no such key
        why = listed.stderr.decode("utf-8", errors="replace").strip()[:300]
        raise DirectoryError(f"git config failed: {why}")
    names = listed.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    drivers = dict.fromkeys(n[len("filter.") :].rpartition(".")[0] for n in names if n)
    if len(drivers) > MAX_FILTERS:
        raise DirectoryError(
            f"the repository's config defines {len(drivers):,} filter drivers; "
            f"a project works with at most {MAX_FILTERS}."
        )
    env, count = {}, 0
    for driver in drivers:
        for key in FILTER_KEYS:
            env[f"GIT_CONFIG_KEY_{count}"] = f"filter.{driver}.{key}"
            env[f"GIT_CONFIG_VALUE_{count}"] = ""
            count += 1
        env[f"GIT_CONFIG_KEY_{count}"] = f"filter.{driver}.required"
        env[f"GIT_CONFIG_VALUE_{count}"] = "false"
        count += 1
    if count:
        env["GIT_CONFIG_COUNT"] = str(count)
    return env


def _git_head(command: list[str], options: dict, name: str, limit: int) -> str:
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options
    ) as proc:
        timer = threading.Timer(GIT_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            data = proc.stdout.read(limit + 1)
            cut = len(data) > limit
            if cut:
                proc.kill()
            error = proc.stderr.read(300 * 4)
            proc.wait()
        finally:
            timer.cancel()
    text = data[:limit].decode("utf-8", errors="replace")
    if cut:
        return text + f"\n… cut at {limit:,} bytes\n"
    if proc.returncode != 0:
        why = error.decode("utf-8", errors="replace").strip()[:300]
        raise DirectoryError(f"git {name} failed: {why}")
    return text


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
    _make_directory(path)
    if (path / ".git").exists():
        if changed_files(path, include_deleted=True):
            raise DirectoryError(
                f"{path} has uncommitted changes; commit or stash them first."
            )
        return
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", "artoo: project start")


def _make_directory(path: Path) -> None:
    """Create ``path`` and its missing parents.

    Under an allowed path, each directory is made beneath that path's fd,
    never through a symlink (a directory swapped for a link since the path
    was checked is refused, and nothing is made where it points), as the owner
    of the directory it is made in. Elsewhere, the path is artoo's own area.
    """
    roots = [Path(r) for r in settings.ARTOO_ALLOWED_PATHS]
    held = [r for r in roots if path.is_relative_to(r)]
    if not held:
        path.mkdir(parents=True, exist_ok=True)
        return
    base = max(held, key=lambda r: len(r.parts))
    parts = path.relative_to(base).parts
    try:
        with Root(base) as root:
            for depth in range(1, len(parts) + 1):
                rel = "/".join(parts[:depth])
                found = root.lstat(rel)
                if found is None:
                    parent = root.lstat("/".join(parts[: depth - 1]))
                    with as_owner(parent.st_uid, parent.st_gid):
                        root.mkdir(rel, 0o755)
                elif stat.S_ISLNK(found.st_mode):
                    raise NotBeneath(0, f"{base / rel} is a symlink")
                elif not stat.S_ISDIR(found.st_mode):
                    raise DirectoryError(f"{base / rel} is not a directory.")
    except NotBeneath as error:
        raise DirectoryError(
            f"{path} is not reached from {base} without a symlink "
            f"({error.strerror or error}); choose a directory that is."
        ) from None


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


def tracked(path: Path, commit_hash: str) -> list[str]:
    """Return the files a commit holds, relative to ``path``."""
    if not HASH.fullmatch(commit_hash):
        raise DirectoryError(f"{commit_hash!r} is not a commit hash.")
    out = git(path, "ls-tree", "-r", "-z", "--name-only", commit_hash, "--")
    return [name for name in out.split("\0") if name]


def head(path: Path) -> str:
    """Return the hash of the last commit in ``path``."""
    return git(path, "rev-parse", "--verify", "HEAD^{commit}").strip()


def commit(path: Path, message: str) -> str:
    """Commit every change in ``path``; return the commit's hash.

    Return "" when there was nothing to commit, unless the last commit has
    this message: a redelivered step finds its own commit made before.
    """
    message = message[:500]
    if not changed_files(path, include_deleted=True):
        last = git(path, "log", "-1", "--format=%B").strip()
        return head(path) if last == message.strip() else ""
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return head(path)


def export(path: Path, commit_hash: str, dest: Path) -> None:
    """Write the files of a commit into the empty directory ``dest``.

    The archive is git's own (``git archive``), read with tarfile's ``data``
    filter: nothing lands outside ``dest``, no owner or device is kept. A
    commit larger than ``EXPORT_BYTES`` is refused.
    """
    if not HASH.fullmatch(commit_hash):
        raise DirectoryError(f"{commit_hash!r} is not a commit hash.")
    command, options = _git(path, ("archive", "--format=tar", commit_hash))
    done = subprocess.run(
        command, capture_output=True, timeout=GIT_TIMEOUT_S, check=False, **options
    )
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", errors="replace").strip()[:300]
        raise DirectoryError(f"git archive failed: {why}")
    if len(done.stdout) > EXPORT_BYTES:
        raise DirectoryError(
            f"commit {commit_hash[:12]} is {len(done.stdout):,} bytes as an "
            f"archive; at most {EXPORT_BYTES:,} are exported"
        )
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(dest, filter="data")
    except tarfile.TarError as error:  # a link out of ``dest``, a bad member
        raise DirectoryError(
            f"commit {commit_hash[:12]} not exported: {error}"
        ) from None


@dataclass(frozen=True)
class Discarded:
    """An attempt's discarded work: where it is kept, and what it was."""

    commit: str
    diff: str
    new_files: list[str]


def discard(path: Path, name: str, message: str, last: str = "") -> Discarded | None:
    """Keep the work since ``last`` (default: the last commit) aside, then reset.

    The work tree, as ``git add -A`` sees it, becomes a commit on ``last``
    under ``refs/artoo/discarded/<name>``; the directory is then reset to
    ``last`` (tracked files restored, commits made since dropped from the
    branch), which removes the files that commit holds and ``last`` does not.
    No ``git clean``: it would also delete what the kept commit does not hold
    (the user's empty directories, a file an attempt hid behind a new ignore
    rule). Ignored files stay. Return None when there was nothing to discard.
    """
    if not NAME.fullmatch(name):
        raise DirectoryError(f"{name!r} cannot name a discarded attempt.")
    _check_top_level(path)
    last = git(path, "rev-parse", "--verify", f"{last or 'HEAD'}^{{commit}}").strip()
    ref = DISCARDED_REF + name
    if changed_files(path, include_deleted=True) or head(path) != last:
        git(path, "add", "-A")
        tree = git(path, "write-tree").strip()
        kept = git(path, "commit-tree", tree, "-p", last, "-m", message[:500]).strip()
        git(path, "update-ref", ref, kept)
    elif git(path, "for-each-ref", "--format=%(objectname)", ref).strip():
        # A redelivered reset: the work was kept and the tree reset before.
        kept = git(path, "rev-parse", "--verify", ref).strip()
    else:
        return None
    # The kept work is in the index, so the reset removes the files the
    # attempt created with the changes it made; nothing else is removed.
    git(path, "reset", "-q", "--hard", last)
    new_files = _added(path, last, kept)
    return Discarded(kept, show(path, kept), new_files[:NEW_FILES])


def _check_top_level(path: Path) -> None:
    """Refuse to reset a repository ``path`` is not the top of (a parent's)."""
    top = git(path, "rev-parse", "--show-toplevel").rstrip("\n")
    if Path(top).resolve() != path.resolve():
        raise DirectoryError(f"{path} is not the top of its git repository ({top}).")


def _added(path: Path, base: str, kept: str) -> list[str]:
    out = git(
        path,
        "diff",
        "--name-only",
        "--no-renames",
        "--diff-filter=A",
        "-z",
        base,
        kept,
        "--",
    )
    return [name for name in out.split("\0") if name]


def show(path: Path, commit_hash: str) -> str:
    """Return ``git show --stat --patch`` of a commit, at most ``SHOW_BYTES``."""
    if not HASH.fullmatch(commit_hash):
        raise DirectoryError(f"{commit_hash!r} is not a commit hash.")
    return git(
        path,
        "show",
        "--stat",
        "--patch",
        "--format=fuller",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        commit_hash,
        "--",
        limit=SHOW_BYTES,
    )
