"""A sandboxed command's network namespace with a way out but none to the host.

In the ``egress`` network mode every command gets a fresh network namespace
whose only link is a tap device served by ``slirp4netns`` (Debian package
``slirp4netns``), a user-mode TCP/IP stack that opens the command's outbound
connections as ordinary sockets of the host. ``--disable-host-loopback`` makes
slirp4netns refuse connections to the host's loopback, so Redis, PostgreSQL
and the web app listening on 127.0.0.1 stay out of reach; the namespace's own
loopback is the command's alone.

The namespace is held by a small process (``unshare --net``) that exists
before the command does, and the command is started with ``nsenter`` into it
only once slirp4netns has said on its ready fd that the network is up::

    with egress_namespace(rootless=False) as enter:
        run_process(enter + ["unshare", "--mount", ...])
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from roles.tools.errors import ToolError

SLIRP = "slirp4netns"
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
# The holder prints one line once it is inside the new namespace, then waits
# for its stdin to close: the namespace lives exactly as long as the command.
HOLD = ("sh", "-c", "echo; exec cat >/dev/null")
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


class EgressError(ToolError):
    """The egress network could not be set up; the command did not run."""


@contextmanager
def egress_namespace(*, rootless: bool) -> Iterator[list[str]]:
    """Yield the argv prefix that enters a fresh egress-only network namespace.

    The namespace, its holder and slirp4netns are gone when the block ends.
    """
    slirp = shutil.which(SLIRP)
    if slirp is None:
        raise EgressError(
            "the sandbox's egress network needs slirp4netns (Debian package "
            "slirp4netns), which is not installed; the command did not run"
        )
    holder = _start_holder(rootless)
    try:
        with _slirp(slirp, holder.pid, rootless):
            yield _enter(holder.pid, rootless)
    finally:
        _stop(holder)


def _start_holder(rootless: bool) -> subprocess.Popen:
    """Start the process that owns the namespace; return it once inside."""
    argv = ["unshare", "--net"]
    if rootless:
        argv += ["--user", "--map-root-user"]
    holder = subprocess.Popen(
        [*argv, "--", *HOLD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=ENV,
        start_new_session=True,
    )
    if holder.stdout.readline() != b"\n":
        _stop(holder)
        raise EgressError(
            "the sandbox's network namespace could not be created "
            f"(unshare --net exited {holder.returncode}); the command did not run"
        )
    return holder


@contextmanager
def _slirp(binary: str, pid: int, rootless: bool) -> Iterator[None]:
    """Run slirp4netns for the namespace of ``pid`` until the block ends."""
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()
    with tempfile.TemporaryFile() as log:
        try:
            slirp = _start_slirp(binary, pid, rootless, ready_w, exit_r, log)
        except OSError:
            os.close(ready_r)
            os.close(exit_w)
            raise
        finally:
            os.close(ready_w)
            os.close(exit_r)
        try:
            ready = _is_ready(ready_r)
            if ready:
                yield
        finally:
            os.close(ready_r)
            # Closing the exit fd is slirp4netns's signal to stop.
            os.close(exit_w)
            _reap(slirp)
        if not ready:
            log.seek(0)
            said = log.read()[-500:].decode("utf-8", errors="replace").strip()
            raise EgressError(
                "slirp4netns did not bring the sandbox's network up: "
                f"{said or 'no reason given'}; the command did not run"
            )


def _start_slirp(
    binary: str, pid: int, rootless: bool, ready_w: int, exit_r: int, log
) -> subprocess.Popen:
    """Start slirp4netns on the namespace of ``pid``, its output to ``log``."""
    argv = [
        binary,
        "--configure",
        "--mtu=65520",
        "--disable-host-loopback",
        # slirp4netns parses the command's packets: it confines itself too.
        "--enable-sandbox",
        "--enable-seccomp",
        f"--ready-fd={ready_w}",
        f"--exit-fd={exit_r}",
    ]
    if rootless:
        argv.append(f"--userns-path=/proc/{pid}/ns/user")
    return subprocess.Popen(
        [*argv, str(pid), "tap0"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        pass_fds=(ready_w, exit_r),
        env=ENV,
        start_new_session=True,
    )


def _is_ready(ready_r: int) -> bool:
    """Return True once slirp4netns reports the network up, False if it fails."""
    readable, _, _ = select.select([ready_r], [], [], READY_TIMEOUT_S)
    return bool(readable) and os.read(ready_r, 1) == b"1"


def _enter(pid: int, rootless: bool) -> list[str]:
    """Return the nsenter argv prefix that joins the holder's namespaces."""
    argv = ["nsenter", f"--net=/proc/{pid}/ns/net"]
    if rootless:
        # Only the user namespace that owns the network one may join it; the
        # worker's uid is root there already, and setgroups is denied in it.
        argv[1:1] = [f"--user=/proc/{pid}/ns/user", "--preserve-credentials"]
    return [*argv, "--"]


def _reap(proc: subprocess.Popen) -> None:
    """Wait for ``proc`` to end, killing it if it does not within the grace."""
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _stop(holder: subprocess.Popen) -> None:
    """End the holder, and with it the namespace once the command has left."""
    if holder.stdin is not None:
        holder.stdin.close()
    _reap(holder)
    if holder.stdout is not None:
        holder.stdout.close()
