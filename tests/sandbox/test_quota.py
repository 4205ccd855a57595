"""Disk quotas of sandboxed commands, over real processes and real overlays."""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from roles.tools.diskquota import BUDGET_FILE, MB, run_used
from roles.tools.errors import ToolError
from roles.tools.sandbox import Limits
from roles.tools.shell import parse_shell_output
from tests.conftest import wait_until
from tests.sandbox.conftest import VICTIM_TEXT, Operator, make_toolbox


def quotas(policy, **limits):
    return replace(policy, limits=Limits(cpu_s=30, **limits))


def shell(toolbox, command: str) -> tuple[int | None, str]:
    return parse_shell_output(toolbox.call("shell", {"command": command}))


def leftovers(policy, workspace) -> list[str]:
    return sorted(p.name for p in (policy.state_dir / workspace.name).glob("cmd-*"))


def test_over_the_byte_quota_nothing_is_applied(policy, workspace):
    operator = Operator(True)
    toolbox = make_toolbox(quotas(policy, quota_mb=2), workspace, operator)
    code, out = shell(
        toolbox, "rm victim.txt; head -c 3M /dev/urandom > big; echo small > s.txt"
    )
    assert code == 0
    # big, s.txt and the whiteout that records the deletion of victim.txt.
    assert (
        "[sandbox] the command wrote 3.0 MB in 3 files, over the per-command "
        "quota of 2.0 MB; nothing was applied"
    ) in out
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT
    assert not (workspace / "big").exists()
    assert not (workspace / "s.txt").exists()
    assert operator.asks == []
    assert leftovers(policy, workspace) == []
    assert "over the per-command quota" in toolbox.evidence[-1]


def test_under_the_byte_quota_the_effect_is_applied(policy, workspace):
    toolbox = make_toolbox(quotas(policy, quota_mb=4), workspace, Operator(False))
    code, out = shell(toolbox, "head -c 3M /dev/urandom > big")
    assert code == 0
    assert "[sandbox]" not in out
    assert (workspace / "big").stat().st_size == 3 * MB


def test_over_the_file_count_quota_nothing_is_applied(policy, workspace):
    toolbox = make_toolbox(quotas(policy, quota_files=50), workspace, Operator(True))
    code, out = shell(toolbox, "mkdir many && touch many/f{1..200}")
    assert code == 0
    assert "[sandbox] the command made at least 51 files and directories" in out
    assert "over the per-command quota of 50; nothing was applied" in out
    assert not (workspace / "many").exists()


def test_a_sparse_file_longer_than_the_apparent_quota_is_refused(policy, workspace):
    limits = {"quota_mb": 100, "apparent_mb": 400}
    toolbox = make_toolbox(quotas(policy, **limits), workspace, Operator(True))
    code, out = shell(toolbox, "truncate -s 900M f")
    assert code == 0
    assert "[sandbox] the command's files have an apparent size of 900 MB" in out
    assert "nothing was applied" in out
    assert not (workspace / "f").exists()


def test_a_sparse_file_is_charged_its_blocks_not_its_length(policy, workspace):
    limits = {"quota_mb": 100, "apparent_mb": 400}
    toolbox = make_toolbox(quotas(policy, **limits), workspace, Operator(True))
    code, out = shell(toolbox, "truncate -s 300M f")
    assert "[sandbox]" not in out
    assert (workspace / "f").stat().st_size == 300 * MB
    budget = policy.state_dir / workspace.name / BUDGET_FILE
    assert json.loads(budget.read_text())["commands"] == 1
    assert run_used(budget.parent) < MB


def test_a_command_killed_at_the_file_size_limit_leaves_nothing(policy, workspace):
    toolbox = make_toolbox(quotas(policy, file_mb=1), workspace, Operator(True))
    # head dies of SIGXFSZ (153), or fails with EFBIG where an init left the
    # signal ignored: either way its partial file must not land.
    code, out = shell(toolbox, "echo kept > a.txt; head -c 5M /dev/zero > big")
    assert code in (1, 153)
    assert (
        "[sandbox] a file reached the file-size limit of 1.0 MB; "
        "the command's effect was not applied"
    ) in out
    assert not (workspace / "big").exists()
    assert not (workspace / "a.txt").exists()


def test_a_writer_that_ignores_sigxfsz_leaves_nothing_either(policy, workspace):
    # Python ignores SIGXFSZ: its write fails, the command goes on, exit 0.
    toolbox = make_toolbox(quotas(policy, file_mb=1), workspace, Operator(True))
    write = "open('big', 'wb').write(bytes(5 << 20))"
    code, out = shell(toolbox, f'python3 -c "{write}"; true')
    assert code == 0
    assert "[sandbox] a file reached the file-size limit of 1.0 MB" in out
    assert not (workspace / "big").exists()


def test_the_run_budget_is_shared_by_its_commands_and_subtasks(policy, workspace):
    limited = quotas(policy, quota_mb=3, run_quota_mb=5)
    first = make_toolbox(limited, workspace, Operator(True))
    code, out = shell(first, "head -c 2M /dev/urandom > a")
    assert "[sandbox]" not in out
    code, out = shell(first, "head -c 2M /dev/urandom > b")
    assert "[sandbox]" not in out
    # A later subtask of the same run gets a new Sandbox over the same run dir.
    second = make_toolbox(limited, workspace, Operator(True))
    code, out = shell(second, "head -c 2M /dev/urandom > c")
    assert "[sandbox] the command wrote 2.0 MB; with the 4.0 MB" in out
    assert "over the per-run quota of 5.0 MB; nothing was applied" in out
    assert (workspace / "a").exists() and (workspace / "b").exists()
    assert not (workspace / "c").exists()


def test_too_little_free_disk_refuses_to_start_the_command(policy, workspace):
    toolbox = make_toolbox(
        quotas(policy, min_free_mb=1 << 40), workspace, Operator(True)
    )
    with pytest.raises(ToolError, match=r"^\[sandbox\] only .* MB are free"):
        toolbox.call("shell", {"command": "touch /tmp/ran && touch ran"})
    assert not (policy.state_dir / workspace.name / "tmp" / "ran").exists()
    assert not (workspace / "ran").exists()
    assert "the command did not run" in toolbox.evidence[-1]


# How much it had written when the watchdog looked depends on the disk's speed.
STOPPED = (
    r"\[sandbox\] the command was stopped: it had written (at least )?[\d.]+ MB "
    r"\(files and /tmp\), over the per-command quota of 5\.0 MB; nothing was applied"
)


def run_tmp(policy, workspace):
    return policy.state_dir / workspace.name / "tmp"


def marked_sleep() -> str:
    """Return a ``sleep`` whose argument marks its processes for ``running``."""
    return f"sleep 29.{secrets.randbelow(10**6):06d}"


def running(marker: str) -> list[int]:
    """Return the pids of live processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # not a process, or gone
        if entry.name.isdigit() and marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def test_a_command_writing_past_the_quota_is_stopped_while_it_runs(policy, workspace):
    toolbox = make_toolbox(quotas(policy, quota_mb=5), workspace, Operator(True))
    sleep = marked_sleep()
    code, out = shell(toolbox, f"head -c 50M /dev/zero > big; {sleep}")
    # Stopped by SIGKILL, not by the shell's 20 s timeout, which raises.
    assert code == 137
    assert re.search(STOPPED, out)
    assert running(sleep) == []
    assert not (workspace / "big").exists()
    assert leftovers(policy, workspace) == []
    assert "the command was stopped" in toolbox.evidence[-1]


def test_a_command_writing_past_the_quota_in_tmp_is_stopped(policy, workspace):
    toolbox = make_toolbox(quotas(policy, quota_mb=5), workspace, Operator(True))
    sleep = marked_sleep()
    code, out = shell(
        toolbox, f"echo kept > a.txt; head -c 50M /dev/zero > /tmp/big; {sleep}"
    )
    assert code == 137
    assert re.search(STOPPED, out)
    assert running(sleep) == []
    assert not (workspace / "a.txt").exists()
    assert leftovers(policy, workspace) == []


def test_what_tmp_held_before_is_not_the_next_commands_quota(policy, workspace):
    toolbox = make_toolbox(quotas(policy, quota_mb=5), workspace, Operator(True))
    (run_tmp(policy, workspace) / "old").write_bytes(os.urandom(8 * MB))
    code, out = shell(toolbox, "echo hi > a.txt; sleep 1")
    assert code == 0
    assert "[sandbox]" not in out
    assert (workspace / "a.txt").read_text() == "hi\n"


def test_the_runs_tmp_counts_toward_the_run_budget(policy, workspace):
    toolbox = make_toolbox(
        quotas(policy, quota_mb=10, run_quota_mb=5), workspace, Operator(True)
    )
    code, out = shell(toolbox, "head -c 3M /dev/urandom > /tmp/t")
    assert "[sandbox]" not in out
    code, out = shell(toolbox, "head -c 3M /dev/urandom > f")
    # Judged when it ends, or stopped by the watchdog first on a slow machine.
    assert "over the per-run quota of 5.0 MB; nothing was applied" in out
    assert not (workspace / "f").exists()
    # /tmp is counted at its size, not charged: emptied, it no longer counts.
    code, out = shell(toolbox, "rm /tmp/t")
    code, out = shell(toolbox, "head -c 3M /dev/urandom > f")
    assert "[sandbox]" not in out
    assert (workspace / "f").stat().st_size == 3 * MB


def test_a_user_cancel_still_kills_the_command_as_before(policy, workspace):
    stop = threading.Event()
    toolbox = make_toolbox(
        quotas(policy, quota_mb=5), workspace, Operator(True), cancelled=stop.is_set
    )
    ready = run_tmp(policy, workspace) / "ready"
    sleep = marked_sleep()
    canceller = threading.Thread(
        target=lambda: (wait_until(ready.exists, what="the command runs"), stop.set())
    )
    canceller.start()
    command = f"echo x > small; touch /tmp/ready; {sleep}"
    with pytest.raises(ToolError, match="command cancelled; its process group"):
        toolbox.call("shell", {"command": command})
    canceller.join(30)
    assert running(sleep) == []
    assert not (workspace / "small").exists()
    assert leftovers(policy, workspace) == []


def test_a_run_whose_tmp_is_over_its_budget_is_refused_before_the_command(
    policy, workspace
):
    toolbox = make_toolbox(quotas(policy, run_quota_mb=5), workspace, Operator(True))
    (run_tmp(policy, workspace) / "old").write_bytes(os.urandom(6 * MB))
    with pytest.raises(ToolError, match=r"^\[sandbox\] this run's /tmp holds "):
        toolbox.call("shell", {"command": "touch ran"})
    assert "remove files from /tmp" in toolbox.evidence[-1]
    assert "the command did not run" in toolbox.evidence[-1]
    assert not (workspace / "ran").exists()
    assert leftovers(policy, workspace) == []
