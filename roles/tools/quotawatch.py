"""A watchdog that stops a sandboxed command once its writes pass a disk quota.

``diskquota.judge`` measures a command's writes when it ends; a command that
keeps writing would fill the host's disk first. A ``Watchdog`` is the
``cancelled`` callable ``run_process`` polls while it waits: it passes the
caller's cancel through unchanged and, at most every ``EVERY_S``, walks the
command's upper dirs and the run's /tmp with ``diskquota.measure``, which stops
as soon as a quota is passed (a walk costs at most a quota's worth of
``lstat``). It stops the command when:

- the upper dirs plus what /tmp gained since the command started pass the
  per-command quota of bytes or entries (the files an earlier command left in
  /tmp are the run's, not this command's);
- the run's charged bytes plus the upper dirs plus all of /tmp pass the per-run
  quota.

It kills the command's process group itself, rather than answering True, so
``run_process`` still returns the output written so far, and keeps the
``[sandbox] …`` line that replaces the command's effect.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from roles.tools.diskquota import Quota, Usage, _mb, _past, is_over, measure, run_used
from roles.tools.shell import kill_group

EVERY_S = 0.5


class Watchdog:
    """Watch a running command's writes and kill it over a disk quota."""

    def __init__(
        self,
        quota: Quota,
        tmp: Path,
        run_dir: Path,
        cancelled: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.quota = quota
        self.tmp = tmp
        self.cancelled = cancelled
        self.clock = clock
        self.uppers: list[Path] = []
        self.stopped: str | None = None
        self._proc: subprocess.Popen | None = None
        self._run_used = run_used(run_dir)
        self._base = measure([tmp], Quota(run_bytes=quota.run_bytes))
        # Most commands end before the first walk: they cost nothing here.
        self._due = clock() + EVERY_S

    def refusal_to_start(self) -> str | None:
        """Return why no command may start while /tmp alone passes the run quota."""
        limit = self.quota.run_bytes
        if not _past(self._base.bytes, limit):
            return None
        at = "at least " if self._base.partial else ""
        return (
            f"[sandbox] this run's /tmp holds {at}{_mb(self._base.bytes)} MB, over "
            f"the per-run quota of {_mb(limit)} MB; the command did not run: "
            "remove files from /tmp"
        )

    def tracking(self, track: Callable[[subprocess.Popen, bool], None]):
        """Return ``track`` that also keeps the process for the watchdog to kill."""

        def tracked(proc: subprocess.Popen, running: bool) -> None:
            self._proc = proc if running else None
            track(proc, running)

        return tracked

    def __call__(self) -> bool:
        """Return True when the caller cancelled; measure the writes when due."""
        if self.cancelled():
            return True
        now = self.clock()
        if self.stopped is None and now >= self._due:
            self._due = now + EVERY_S
            self.check()
        return False

    def check(self) -> None:
        """Measure the command's writes now; over a quota, kill it and say why."""
        quota, base = self.quota, self._base
        limits = Quota(
            bytes=_plus(quota.bytes, base.bytes),
            files=_plus(quota.files, base.files),
            run_bytes=quota.run_bytes,
        )
        usage = measure([*self.uppers, self.tmp], limits, self._run_used)
        if not is_over(usage, limits, self._run_used):
            return
        self.stopped = self._message(usage)
        if self._proc is not None:
            # run_process then sees the exit and returns the output so far.
            kill_group(self._proc, grace_s=0)

    def _message(self, usage: Usage) -> str:
        quota, at = self.quota, "at least " if usage.partial else ""
        wrote = usage.bytes - self._base.bytes
        made = usage.files - self._base.files
        if _past(wrote, quota.bytes):
            why = (
                f"it had written {at}{_mb(wrote)} MB (files and /tmp), over the "
                f"per-command quota of {_mb(quota.bytes)} MB"
            )
        elif _past(made, quota.files):
            why = (
                f"it had made {at}{made} files and directories (files and /tmp), "
                f"over the per-command quota of {quota.files}"
            )
        else:
            why = (
                f"with the {_mb(self._run_used)} MB this run's earlier commands "
                f"wrote, its files and /tmp had reached {at}"
                f"{_mb(self._run_used + usage.bytes)} MB, over the per-run quota "
                f"of {_mb(quota.run_bytes)} MB"
            )
        return f"[sandbox] the command was stopped: {why}; nothing was applied"


def _plus(limit: int, base: int) -> int:
    # 0 means no limit, and stays so.
    return limit + base if limit > 0 else 0
