"""Disk quotas of sandboxed commands: what a command wrote, measured and judged.

A sandboxed command's writes land in its overlay upper dirs, on the host's disk.
Before its effect is computed, ``judge`` walks them (``lstat``, never following
a symlink) and counts:

- ``bytes``: the disk they take, ``st_blocks * 512`` of every entry. A sparse
  file counts only the blocks really written, as the apply step copies it
  sparse; this is what the per-command and the per-run quotas count.
- ``apparent``: the sizes of the regular files, what sparse files become when
  something fills their holes; it has its own, larger per-command quota.
- ``files``: the entries (files, directories, links, whiteouts).

The walk stops as soon as a count passes its quota, so a command that made a
million files costs the worker no more than a quota's worth of ``lstat``. Over a
quota, or when a file reached the file-size limit (RLIMIT_FSIZE), ``judge``
returns the ``[sandbox] …`` line that replaces the command's effect: nothing of
it is applied. The run's total lives in a small JSON file in the run's scratch
dir, shared under a file lock by every subtask of the run::

    {"bytes": 5242880, "commands": 3}

The run's ``/tmp`` (its scratch dir, bound into every command of the run) counts
toward the per-run quota at its current size, never charged into the total: it
persists across the run's commands, and a command may empty it. While a command
runs, ``roles.tools.quotawatch`` measures the same way and stops it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MB = 1 << 20
# bash reports a command killed by a signal as 128 + its number.
FILE_LIMIT_EXIT = 128 + signal.SIGXFSZ
BUDGET_FILE = "quota.json"


@dataclass(frozen=True)
class Quota:
    """What one command may write, in bytes and entries (0 means no limit)."""

    bytes: int = 0
    apparent: int = 0
    files: int = 0
    run_bytes: int = 0
    file_size: int = 0
    min_free: int = 0

    @classmethod
    def of(cls, limits) -> Quota:
        """Return the quotas of a sandbox's ``Limits`` (sizes there are in MB)."""
        return cls(
            bytes=limits.quota_mb * MB,
            apparent=limits.apparent_mb * MB,
            files=limits.quota_files,
            run_bytes=limits.run_quota_mb * MB,
            file_size=limits.file_mb * MB,
            min_free=limits.min_free_mb * MB,
        )


@dataclass
class Usage:
    """What the upper dirs hold; ``partial`` when the walk stopped early."""

    bytes: int = 0
    apparent: int = 0
    files: int = 0
    full_file: bool = False
    partial: bool = False

    def add(self, st: os.stat_result, file_size: int) -> None:
        """Count one entry's disk blocks, apparent size and its reaching the limit."""
        self.files += 1
        self.bytes += st.st_blocks * 512
        if stat.S_ISREG(st.st_mode):
            self.apparent += st.st_size
            if file_size and st.st_size >= file_size:
                self.full_file = True


def is_over(usage: Usage, quota: Quota, run_used: int = 0) -> bool:
    """Return True when ``usage`` passes a quota or a file reached the size limit."""
    return (
        usage.full_file
        or _past(usage.bytes, quota.bytes)
        or _past(usage.apparent, quota.apparent)
        or _past(usage.files, quota.files)
        or (quota.run_bytes > 0 and run_used + usage.bytes > quota.run_bytes)
    )


def measure(uppers: Iterable[Path], quota: Quota, run_used: int = 0) -> Usage:
    """Return what the upper dirs hold, stopping as soon as a quota is passed."""
    usage = Usage()
    stack = [str(path) for path in uppers if os.path.isdir(path)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                # Stopping at the next entry, not at the one that passed the
                # quota, tells a complete count from a lower bound.
                if is_over(usage, quota, run_used):
                    usage.partial = True
                    return usage
                usage.add(entry.stat(follow_symlinks=False), quota.file_size)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return usage


def refusal(
    usage: Usage, quota: Quota, exit_code: int | None, run_used: int = 0
) -> str | None:
    """Return the ``[sandbox]`` line that refuses the effect, or None when it fits."""
    if quota.file_size and (usage.full_file or exit_code == FILE_LIMIT_EXIT):
        return (
            f"[sandbox] a file reached the file-size limit of "
            f"{_mb(quota.file_size)} MB; the command's effect was not applied"
        )
    wrote = "at least " if usage.partial else ""
    if _past(usage.bytes, quota.bytes):
        return (
            f"[sandbox] the command wrote {wrote}{_mb(usage.bytes)} MB in "
            f"{usage.files} files, over the per-command quota of "
            f"{_mb(quota.bytes)} MB; nothing was applied"
        )
    if _past(usage.files, quota.files):
        return (
            f"[sandbox] the command made {wrote}{usage.files} files and "
            f"directories, over the per-command quota of {quota.files}; "
            "nothing was applied"
        )
    if _past(usage.apparent, quota.apparent):
        return (
            f"[sandbox] the command's files have an apparent size of {wrote}"
            f"{_mb(usage.apparent)} MB (a sparse file counts its full length "
            f"here), over the per-command quota of {_mb(quota.apparent)} MB; "
            "nothing was applied"
        )
    if quota.run_bytes and run_used + usage.bytes > quota.run_bytes:
        return (
            f"[sandbox] the command wrote {wrote}{_mb(usage.bytes)} MB; with the "
            f"{_mb(run_used)} MB this run's earlier commands wrote and its /tmp "
            f"holds, that is over the per-run quota of {_mb(quota.run_bytes)} MB; "
            "nothing was applied"
        )
    return None


def judge(
    uppers: Iterable[Path],
    quota: Quota,
    exit_code: int | None,
    run_dir: Path,
    tmp: Path | None = None,
) -> str | None:
    """Measure a finished command's writes; charge the run or return the refusal.

    The run's ``tmp`` dir, when given, counts toward the per-run quota at its
    current size; it is not charged.
    """
    uppers = list(uppers)
    budget = run_dir / BUDGET_FILE
    with _locked(budget) as handle:
        # The lock spans measuring and charging: a run's subtasks may finish
        # commands at once, and each must see the others' bytes.
        total = _read(handle)
        used = total["bytes"] + tmp_bytes(tmp, quota)
        usage = measure(uppers, quota, used)
        refused = refusal(usage, quota, exit_code, used)
        if refused is None:
            total["bytes"] += usage.bytes
            total["commands"] += 1
            _write(handle, total)
    return refused


def tmp_bytes(tmp: Path | None, quota: Quota) -> int:
    """Return the disk the run's /tmp takes, counted up to just past the run quota."""
    if tmp is None:
        return 0
    return measure([tmp], Quota(run_bytes=quota.run_bytes)).bytes


def run_used(run_dir: Path) -> int:
    """Return the bytes the run's commands were charged so far."""
    try:
        return int(json.loads((run_dir / BUDGET_FILE).read_text())["bytes"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def free_refusal(path: Path, quota: Quota) -> str | None:
    """Return why no command may start with so little disk left, or None."""
    min_free = quota.min_free
    if min_free <= 0:
        return None
    fs = os.statvfs(path)
    free = fs.f_bavail * fs.f_frsize
    if free >= min_free:
        return None
    return (
        f"[sandbox] only {_mb(free)} MB are free on the disk that holds the "
        f"sandbox's scratch, under the floor of {_mb(min_free)} MB; the command "
        "did not run"
    )


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _read(fd: int) -> dict:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 4096):
        raw += chunk
    try:
        data = json.loads(raw)
        return {"bytes": int(data["bytes"]), "commands": int(data["commands"])}
    except (ValueError, KeyError, TypeError):
        # A new file, or one a crash left half-written: start from nothing.
        return {"bytes": 0, "commands": 0}


def _write(fd: int, data: dict) -> None:
    raw = json.dumps(data).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, raw, 0)


def _past(value: int, limit: int) -> bool:
    return limit > 0 and value > limit


def _mb(n: int) -> str:
    return f"{n / MB:.1f}" if n < 10 * MB else str(round(n / MB))
