"""Disk quotas: what a command's upper dirs hold, measured on real files."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import threading

import pytest

from roles.tools.diskquota import (
    BUDGET_FILE,
    FILE_LIMIT_EXIT,
    MB,
    Quota,
    Usage,
    free_refusal,
    judge,
    measure,
    refusal,
    run_used,
)
from roles.tools.quotawatch import EVERY_S, Watchdog
from tests.conftest import wait_until


@pytest.fixture
def upper(tmp_path):
    path = tmp_path / "upper0"
    path.mkdir()
    return path


def test_a_sparse_file_counts_its_blocks_as_bytes_and_its_length_as_apparent(upper):
    with open(upper / "f", "wb") as f:
        f.truncate(100 * MB)
    usage = measure([upper], Quota())
    assert usage.apparent == 100 * MB
    assert usage.bytes < MB
    assert usage.files == 1


def test_written_bytes_count_their_blocks(upper):
    (upper / "d").mkdir()
    (upper / "d" / "f").write_bytes(os.urandom(3 * MB))
    usage = measure([upper], Quota())
    assert usage.bytes >= 3 * MB
    assert usage.files == 2
    assert not usage.partial


def test_the_walk_stops_once_the_file_count_is_passed(upper):
    for n in range(100):
        (upper / f"f{n}").touch()
    usage = measure([upper], Quota(files=10))
    assert usage.partial
    assert usage.files == 11  # the one past the quota, no more


def test_a_symlink_is_counted_not_followed(upper, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(2 * MB))
    (upper / "link").symlink_to(outside)
    usage = measure([upper], Quota())
    assert usage.files == 1
    assert usage.apparent == 0
    assert usage.bytes < MB


def test_a_file_at_the_size_limit_is_found(upper):
    (upper / "big").write_bytes(b"0" * MB)
    usage = measure([upper], Quota(file_size=MB))
    assert usage.full_file
    message = refusal(usage, Quota(file_size=MB), 0)
    assert message == (
        "[sandbox] a file reached the file-size limit of 1.0 MB; "
        "the command's effect was not applied"
    )


def test_a_command_killed_by_sigxfsz_is_refused_whatever_it_left():
    assert FILE_LIMIT_EXIT == 153
    assert "file-size limit of 1024 MB" in refusal(
        Usage(), Quota(file_size=1024 * MB), FILE_LIMIT_EXIT
    )


def test_over_the_byte_quota_the_message_says_how_much_in_how_many_files():
    usage = Usage(bytes=300 * MB, apparent=300 * MB, files=4)
    assert refusal(usage, Quota(bytes=100 * MB), 0) == (
        "[sandbox] the command wrote 300 MB in 4 files, over the per-command "
        "quota of 100 MB; nothing was applied"
    )


def test_a_stopped_walk_says_at_least():
    usage = Usage(files=21, partial=True)
    message = refusal(usage, Quota(files=20), 0)
    assert "made at least 21 files and directories" in message
    assert "quota of 20" in message


def test_sparse_length_has_its_own_quota():
    usage = Usage(bytes=MB, apparent=900 * MB, files=1)
    assert refusal(usage, Quota(bytes=100 * MB, apparent=400 * MB), 0).startswith(
        "[sandbox] the command's files have an apparent size of 900 MB"
    )
    assert refusal(usage, Quota(bytes=100 * MB, apparent=1000 * MB), 0) is None


def test_within_every_quota_nothing_is_refused():
    usage = Usage(bytes=MB, apparent=MB, files=3)
    assert refusal(usage, Quota(bytes=2 * MB, files=3, run_bytes=2 * MB), 0) is None


def test_judge_charges_the_run_and_refuses_past_its_budget(upper, tmp_path):
    (upper / "a").write_bytes(os.urandom(2 * MB))
    quota = Quota(bytes=3 * MB, run_bytes=5 * MB)
    assert judge([upper], quota, 0, tmp_path) is None
    first = run_used(tmp_path)
    assert first >= 2 * MB
    assert judge([upper], quota, 0, tmp_path) is None
    message = judge([upper], quota, 0, tmp_path)
    assert "over the per-run quota of 5.0 MB" in message
    # A refused command is not charged.
    assert run_used(tmp_path) == 2 * first
    assert json.loads((tmp_path / BUDGET_FILE).read_text())["commands"] == 2


def is_waiting_on(path) -> bool:
    """Return True when some process is blocked on a lock of ``path``."""
    st = os.stat(path)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as locks:
        return any("->" in line and inode in line for line in locks)


def test_judge_waits_for_another_subtask_charging_the_same_run(upper, tmp_path):
    (upper / "a").write_bytes(os.urandom(2 * MB))
    quota = Quota(run_bytes=3 * MB)
    results = []
    fd = os.open(tmp_path / BUDGET_FILE, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        waiter = threading.Thread(
            target=lambda: results.append(judge([upper], quota, 0, tmp_path))
        )
        waiter.start()
        wait_until(lambda: is_waiting_on(tmp_path / BUDGET_FILE), what="judge waits")
        # The other subtask charges 2 MB while holding the lock.
        os.write(fd, json.dumps({"bytes": 2 * MB, "commands": 1}).encode())
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    waiter.join(30)
    assert "over the per-run quota" in results[0]


def test_a_broken_budget_file_starts_from_nothing(upper, tmp_path):
    (tmp_path / BUDGET_FILE).write_text("{not json")
    assert judge([upper], Quota(run_bytes=MB), 0, tmp_path) is None
    assert run_used(tmp_path) == 0


def test_free_space_below_the_floor_refuses_the_command(tmp_path):
    message = free_refusal(tmp_path, Quota(min_free=1 << 60))
    assert message.startswith("[sandbox] only ")
    assert "the command did not run" in message
    assert free_refusal(tmp_path, Quota(min_free=1)) is None
    assert free_refusal(tmp_path, Quota()) is None


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def watchdog(tmp_path, quota, cancelled=lambda: False):
    tmp = tmp_path / "run" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    watch = Watchdog(quota, tmp, tmp_path / "run", cancelled, clock)
    watch.uppers = [tmp_path / "upper0"]
    return watch, clock


def test_the_watchdog_stops_writes_past_the_quota_once_due(upper, tmp_path):
    watch, clock = watchdog(tmp_path, Quota(bytes=2 * MB))
    (upper / "big").write_bytes(os.urandom(3 * MB))
    assert watch() is False
    assert watch.stopped is None  # not due yet: no walk
    clock.now += EVERY_S
    assert watch() is False  # it kills the process itself, run_process sees it end
    assert watch.stopped == (
        "[sandbox] the command was stopped: it had written 3.0 MB (files and /tmp), "
        "over the per-command quota of 2.0 MB; nothing was applied"
    )


def test_the_watchdog_counts_what_tmp_gained_not_what_it_held(upper, tmp_path):
    tmp = tmp_path / "run" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "old").write_bytes(os.urandom(3 * MB))
    watch, clock = watchdog(tmp_path, Quota(bytes=2 * MB))
    clock.now += EVERY_S
    watch()
    assert watch.stopped is None
    (tmp / "new").write_bytes(os.urandom(3 * MB))
    clock.now += EVERY_S
    watch()
    assert "it had written 3.0 MB (files and /tmp)" in watch.stopped


def test_the_watchdog_stops_past_what_remains_of_the_run_budget(upper, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / BUDGET_FILE).write_text('{"bytes": 4194304, "commands": 2}')
    watch, clock = watchdog(tmp_path, Quota(bytes=10 * MB, run_bytes=5 * MB))
    (upper / "a").write_bytes(os.urandom(2 * MB))
    clock.now += EVERY_S
    watch()
    assert watch.stopped == (
        "[sandbox] the command was stopped: with the 4.0 MB this run's earlier "
        "commands wrote, its files and /tmp had reached 6.0 MB, over the per-run "
        "quota of 5.0 MB; nothing was applied"
    )


def test_the_watchdog_counts_entries_too(upper, tmp_path):
    watch, clock = watchdog(tmp_path, Quota(files=10))
    for n in range(30):
        (upper / f"f{n}").touch()
    clock.now += EVERY_S
    watch()
    assert "it had made at least 11 files and directories" in watch.stopped


def test_the_watchdog_kills_the_tracked_process_group(upper, tmp_path):
    watch, clock = watchdog(tmp_path, Quota(bytes=MB))
    seen = []
    track = watch.tracking(lambda proc, running: seen.append(running))
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        track(proc, True)
        (upper / "big").write_bytes(os.urandom(2 * MB))
        clock.now += EVERY_S
        watch()
        assert proc.poll() == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
    assert seen == [True]


def test_a_user_cancel_passes_through_without_a_walk(upper, tmp_path):
    watch, clock = watchdog(tmp_path, Quota(bytes=MB), cancelled=lambda: True)
    (upper / "big").write_bytes(os.urandom(2 * MB))
    clock.now += EVERY_S
    assert watch() is True
    assert watch.stopped is None


def test_a_tmp_over_the_run_budget_refuses_the_next_command(tmp_path):
    tmp = tmp_path / "run" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "old").write_bytes(os.urandom(3 * MB))
    watch, _ = watchdog(tmp_path, Quota(run_bytes=2 * MB))
    assert watch.refusal_to_start() == (
        "[sandbox] this run's /tmp holds 3.0 MB, over the per-run quota of 2.0 MB; "
        "the command did not run: remove files from /tmp"
    )
    watch, _ = watchdog(tmp_path, Quota(run_bytes=4 * MB))
    assert watch.refusal_to_start() is None


def test_judge_counts_the_runs_tmp_at_its_size_without_charging_it(upper, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "t").write_bytes(os.urandom(3 * MB))
    (upper / "a").write_bytes(os.urandom(3 * MB))
    quota = Quota(run_bytes=5 * MB)
    message = judge([upper], quota, 0, tmp_path, tmp)
    assert "with the 3.0 MB this run's earlier commands wrote and its /tmp" in message
    assert run_used(tmp_path) == 0
    (tmp / "t").unlink()
    assert judge([upper], quota, 0, tmp_path, tmp) is None
    assert run_used(tmp_path) >= 3 * MB
