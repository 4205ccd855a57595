"""The ``shell`` tool: ``bash -u -c`` in the workspace, in its own process group.

``-u`` makes a variable that was never set an error (``dir: unbound variable``)
instead of an empty word: ``find $dir -name '*.py' | wc -l`` with ``$dir``
unset would search the workspace and print a count of what is not there.

The result text has one canonical form that machine checks read back::

    [exit code 0]
    hello

The first line is always ``[exit code N]`` (a process killed by signal S reports
``128 + S``, as bash does); stdout and stderr follow, interleaved as written.
A timeout or a cancel kills the whole process group (SIGTERM, then SIGKILL after
a grace period) and raises ToolError, so no ``[exit code N]`` line is shown.
The hints a result gets are added by ``roles.tools.shell_hints``.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roles.tools.errors import ToolError

# bash's flags: a variable that was never set is an error, then the command.
BASH_FLAGS = ("-u", "-c")
EXIT_LINE = re.compile(r"^\[exit code (-?\d+)\]\n?")
POLL_S = 0.05
# A finished shell may leave background children holding the pipe open; they get
# this long to let go before the group is killed so the reader can finish.
PIPE_DRAIN_S = 1.0
CHUNK = 65536


@dataclass
class _Capture:
    """Bytes read from the pipe: the head and the tail up to a cap in all.

    The middle of a huge output is counted, not kept, so an error or an
    expected line at the end of a long log still reaches the validator.
    """

    cap: int
    data: bytearray
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        head_cap = self.cap * 2 // 3
        room = max(head_cap - len(self.data), 0)
        self.data += chunk[:room]
        self.tail += chunk[room:]
        excess = len(self.tail) - (self.cap - head_cap)
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.data.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[output capped: {self.dropped} bytes dropped]\n{tail}"
        return head + tail


def format_shell_output(exit_code: int, text: str) -> str:
    """Return the canonical shell result: ``[exit code N]`` then the output."""
    return f"[exit code {exit_code}]\n{text}"


def parse_shell_output(text: str) -> tuple[int | None, str]:
    """Return ``(exit code, output)`` of a shell result; code None if absent."""
    match = EXIT_LINE.match(text)
    if match is None:
        return None, text
    return int(match.group(1)), text[match.end() :]


class Running:
    """The process groups a toolbox is running, to kill them all at once."""

    def __init__(self) -> None:
        self.procs: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.killed = False

    def track(self, proc: subprocess.Popen, running: bool) -> None:
        """Note a process started or ended; one started after ``kill`` dies."""
        with self.lock:
            if running:
                self.procs.add(proc)
            else:
                self.procs.discard(proc)
        if running and self.killed:
            kill_group(proc, grace_s=0)

    def kill(self) -> None:
        """Kill every running process group now; later ones die as they start."""
        with self.lock:
            self.killed = True
            procs = list(self.procs)
        for proc in procs:
            kill_group(proc, grace_s=0)


def run_shell(command: str, *, cwd: Path, **options: Any) -> str:
    """Run ``command`` with ``bash -u -c`` and return the canonical result text.

    ``options`` are ``run_process``'s: ``timeout_s``, ``output_cap``,
    ``cancelled``, ``track`` (told when the process starts and ends, so a
    Toolbox can kill its group from another thread) and ``kill_grace_s``.
    """
    return run_process(["bash", *BASH_FLAGS, command], cwd=cwd, **options)


def run_process(
    argv: list[str],
    *,
    cwd: Path | str,
    env: dict[str, str] | None = None,
    timeout_s: float = 30,
    output_cap: int = 1_000_000,
    cancelled: Callable[[], bool] = lambda: False,
    track: Callable[[subprocess.Popen, bool], None] = lambda proc, running: None,
    kill_grace_s: float = 2.0,
) -> str:
    """Run ``argv`` in its own process group; return ``[exit code N]`` + output."""
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    capture = _Capture(cap=output_cap, data=bytearray())
    reader = threading.Thread(target=_drain, args=(proc, capture), daemon=True)
    reader.start()
    track(proc, True)
    try:
        stop = _wait(proc, timeout_s, cancelled)
        if stop:
            kill_group(proc, grace_s=kill_grace_s)
        reader.join(PIPE_DRAIN_S)
        if reader.is_alive():
            kill_group(proc, grace_s=0)
            reader.join(PIPE_DRAIN_S)
    finally:
        track(proc, False)
    if stop == "timeout":
        raise ToolError(
            f"command timed out after {timeout_s:g} s and was killed; "
            f"partial output:\n{capture.text()}"
        )
    if stop == "cancelled":
        raise ToolError("command cancelled; its process group was killed")
    return format_shell_output(_exit_code(proc.returncode), capture.text())


def kill_group(proc: subprocess.Popen, *, grace_s: float) -> None:
    """Send SIGTERM to the process group, then SIGKILL after ``grace_s``."""
    if grace_s > 0 and proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    # The leader may be gone while children of the group live on.
    _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait(proc: subprocess.Popen, timeout_s: float, cancelled) -> str:
    """Wait for the process to exit; return "", "cancelled" or "timeout".

    The wait sleeps on a pidfd where the kernel has them, so an exit wakes it at
    once; the cancel flag and the deadline are looked at every ``POLL_S``.
    """
    deadline = time.monotonic() + timeout_s
    pidfd = _pidfd(proc)
    try:
        while True:
            wait_s = min(POLL_S, max(deadline - time.monotonic(), 0))
            if _exited(proc, pidfd, wait_s):
                return ""
            if cancelled():
                return "cancelled"
            if time.monotonic() >= deadline:
                return "timeout"
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(proc: subprocess.Popen) -> int | None:
    """Return a pidfd for the process, or None (no pidfds here, or already reaped)."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def _exited(proc: subprocess.Popen, pidfd: int | None, wait_s: float) -> bool:
    """Wait up to ``wait_s`` for the exit; reap the process and return True on it."""
    if proc.returncode is not None:
        return True
    if pidfd is None:
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    if not poller.poll(wait_s * 1000):
        return False
    proc.wait()
    return True


def _drain(proc: subprocess.Popen, capture: _Capture) -> None:
    stream = proc.stdout
    if stream is None:
        return
    with stream:
        while chunk := stream.read1(CHUNK):
            capture.add(chunk)


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode
