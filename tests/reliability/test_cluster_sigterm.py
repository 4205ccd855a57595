"""A program that owns a cluster and gets SIGTERM leaves no process running."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

from devtools.cluster import ROOT

OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from devtools.cluster import Cluster

    with Cluster(Path(sys.argv[1]), processes=("web",), env={"REDIS_URL": ""}) as c:
        pids = [p.pid for p in c.procs.values()] + [c.redis_proc.pid]
        print("pids", *pids, flush=True)
        sys.stdin.read()  # until the test closes the pipe or the signal comes
    """
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone but for its exit status.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][0] != "Z"


def wait_gone(pid: int, timeout: float) -> None:
    """Wait until ``pid`` has exited, or ``timeout`` seconds have passed."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def test_sigterm_to_the_owner_stops_the_web_process_and_its_redis(tmp_path):
    # Cluster processes run in sessions of their own: before, a SIGTERM to
    # pytest or a bench (kill, timeout) ended it without its teardown and left
    # daphne, the workers, Redis and llama-server running.
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "cluster")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = ""
        while not line.startswith("pids "):
            line = owner.stdout.readline()
            assert line, "the owner ended before its cluster was up"
        pids = [int(pid) for pid in line.split()[1:]]
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        owner.send_signal(signal.SIGTERM)
        assert owner.wait(timeout=60) != 0
        deadline = time.monotonic() + 10
        for pid in pids:
            wait_gone(pid, max(0.0, deadline - time.monotonic()))
        assert not [pid for pid in pids if alive(pid)]
    finally:
        if owner.poll() is None:
            owner.kill()
