"""`make run` in one terminal, docs/operations.md's commands in a plain second one."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import urllib.request

import pytest

from devtools import launcher
from tests.conftest import wait_until
from tests.reliability.harness import pgrep

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = launcher.ROOT
START_TIMEOUT_S = 300
WORKERS = ("pipeline", "memory")
# Set by a test session; a fresh `make run` terminal has none of them.
SESSION_ONLY = (
    "SECRET_KEY",
    "REDIS_URL",
    "DATABASE_URL",
    "DJANGO_SETTINGS_MODULE",
    "ARTOO_MEMORY_PATH",
    "ARTOO_WORKSPACE",
)


class MakeRun:
    """``python -m devtools.launcher run`` (what ``make run`` starts) on a data dir."""

    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.port = launcher.free_port()
        self.log = data_dir / "make-run.log"
        env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
        # Sandboxing is not what is under test; its self-check takes long here.
        env.update(
            ARTOO_DATA_DIR=str(data_dir), ARTOO_PORT=str(self.port), ARTOO_SANDBOX="off"
        )
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "devtools.launcher", "run"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def is_ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"make run exited:\n{self.output()[-3000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", self.port)) != 0:
                return False
        text = self.output()
        return all(re.search(rf"{name}@\S+ ready\.", text) for name in WORKERS)

    def interrupt(self) -> int:
        """Press Ctrl-C in its terminal (SIGINT to the group); return its code."""
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(timeout=120)

    def kill_leftovers(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        # The embedded Redis lives in a session of its own, under the data dir.
        for pid in pgrep(str(self.data_dir)):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def make_run(tmp_path):
    running = MakeRun(tmp_path)
    try:
        wait_until(running.is_ready, START_TIMEOUT_S, 0.5, what="make run ready")
        yield running
    finally:
        running.kill_leftovers()


def second_terminal(data_dir, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "ARTOO_DATA_DIR": str(data_dir),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def succeeded(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    return result.stdout


def test_commands_in_a_second_terminal_join_make_run_until_it_stops(make_run):
    data_dir = make_run.data_dir

    assert "hi" in succeeded(second_terminal(data_dir, "artoo", "echo hi"))
    token = succeeded(second_terminal(data_dir, "create_api_token", "admin")).strip()
    assert "total=" in succeeded(second_terminal(data_dir, "memory", "summary"))
    request = urllib.request.Request(
        f"http://127.0.0.1:{make_run.port}/api/runs",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert len(json.load(reply)["runs"]) == 1

    live = data_dir / "live.json"
    assert stat.S_IMODE(live.stat().st_mode) == 0o600
    assert json.loads(live.read_text())["env"]["SECRET_KEY"] not in make_run.output()

    make_run.interrupt()
    stopped = second_terminal(data_dir, "artoo", "echo hi")
    assert stopped.returncode == 1
    assert "artoo is not running: start it with make run" in stopped.stderr
    assert json.loads(live.read_text())["running"] is False
