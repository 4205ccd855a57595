"""The shell tool on real subprocesses: exit codes, caps, timeouts and kills."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig, ToolError, parse_shell_output
from roles.tools.shell import run_shell
from tests.conftest import wait_until


def is_dead(pid: int, wait_s: float = 10.0) -> bool:
    """Return True once ``pid`` is gone or a zombie (polling up to ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def wait_for_file(path: Path, wait_s: float = 10.0) -> str:
    wait_until(
        lambda: path.exists() and path.read_text().strip(), wait_s, what=f"{path}"
    )
    return path.read_text().strip()


@pytest.fixture
def toolbox(tmp_path):
    return Toolbox(tmp_path, ToolboxConfig(shell_timeout_s=5, kill_grace_s=0.2))


def test_shell_result_starts_with_the_exit_code_line(toolbox):
    output = toolbox.call("shell", {"command": "echo hello"})
    assert output == "[exit code 0]\nhello\n"
    assert parse_shell_output(output) == (0, "hello\n")


def test_shell_reports_a_nonzero_exit_code_and_stderr(toolbox):
    output = toolbox.call("shell", {"command": "echo oops >&2; exit 3"})
    assert parse_shell_output(output) == (3, "oops\n")


def test_shell_runs_in_the_workspace(toolbox, tmp_path):
    output = toolbox.call("shell", {"command": "pwd"})
    assert parse_shell_output(output)[1].strip() == str(tmp_path.resolve())


def test_a_process_killed_by_a_signal_reports_128_plus_the_signal(toolbox):
    output = toolbox.call("shell", {"command": "kill -9 $$"})
    assert parse_shell_output(output)[0] == 137


def test_shell_runs_in_its_own_process_group(toolbox):
    output = toolbox.call("shell", {"command": "ps -o pgid= -p $$; echo $$"})
    pgid, pid = parse_shell_output(output)[1].split()
    assert pgid == pid
    assert int(pgid) != os.getpgrp()


def test_timeout_kills_the_whole_group_and_says_so(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(shell_timeout_s=0.5, kill_grace_s=0.2))
    with pytest.raises(ToolError, match="timed out after 0.5 s"):
        toolbox.call("shell", {"command": "sleep 60 & echo $! > child; wait"})
    assert is_dead(int((tmp_path / "child").read_text()))
    assert "ERROR: command timed out" in toolbox.evidence[-1]


def test_a_command_that_ignores_sigterm_still_dies(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(shell_timeout_s=0.5, kill_grace_s=0.2))
    command = "trap '' TERM; echo $$ > pid; while true; do sleep 0.05; done"
    with pytest.raises(ToolError, match="timed out"):
        toolbox.call("shell", {"command": command})
    assert is_dead(int((tmp_path / "pid").read_text()))


def test_cancel_while_running_kills_the_group(tmp_path):
    stop = threading.Event()
    toolbox = Toolbox(tmp_path, ToolboxConfig(kill_grace_s=0.2), cancelled=stop.is_set)
    pid_file = tmp_path / "pid"
    threading.Thread(
        target=lambda: (wait_for_file(pid_file), stop.set()), daemon=True
    ).start()
    with pytest.raises(ToolError, match="cancelled"):
        toolbox.call("shell", {"command": "echo $$ > pid; sleep 60"})
    assert is_dead(int(pid_file.read_text()))


def test_kill_stops_a_running_command_and_refuses_new_ones(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(shell_timeout_s=60))
    pid_file = tmp_path / "pid"
    killer = threading.Thread(
        target=lambda: (wait_for_file(pid_file), toolbox.kill()), daemon=True
    )
    killer.start()
    with pytest.raises(ToolError, match="cancelled"):
        toolbox.call("shell", {"command": "echo $$ > pid; sleep 60"})
    killer.join(10)
    assert is_dead(int(pid_file.read_text()))
    with pytest.raises(ToolError, match="cancelled"):
        toolbox.call("shell", {"command": "touch after-kill"})
    assert not (tmp_path / "after-kill").exists()
    assert toolbox.is_cancelled()


def test_huge_output_is_capped_and_the_model_sees_head_and_tail(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(output_cap=90_000))
    command = "head -c 5000000 /dev/zero | tr '\\0' y; echo; echo THE-END"
    shown = toolbox.call("shell", {"command": command})
    full = toolbox.records[-1].output
    assert full.startswith("[exit code 0]\n" + "y" * 60_000 + "\n[output capped: ")
    assert full.endswith("y\nTHE-END\n")
    assert len(full) < 90_200
    assert len(shown) < 4100 and "...[middle truncated]..." in shown
    assert shown.endswith("THE-END\n")


def test_background_children_holding_the_pipe_do_not_hang_the_tool(tmp_path):
    output = run_shell("sleep 60 & echo $!; echo started", cwd=tmp_path)
    code, text = parse_shell_output(output)
    child, said = text.split()
    assert (code, said) == (0, "started")
    assert is_dead(int(child))


def test_shell_rejects_a_non_positive_timeout(tmp_path):
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        run_shell("true", cwd=tmp_path, timeout_s=0)
