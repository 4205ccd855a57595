"""An ordinary user's runs against the host, through the whole pipeline.

Real worker, database and Redis, the offline model (each line of a task is a
shell command): the attacks of a user who owns an account, each ending with
a clear message in the run's evidence and nothing of the host changed.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from artoo_web import runs, runtime
from roles.tools.sandbox import remove_tree
from tests.integration.test_approval_parking import parked
from tests.integration.test_sandbox_pipeline import evidence, finished

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the attacks aim at root's files from a root worker"
)


@pytest.fixture
def outside():
    """A root-owned directory outside every allowed path, holding a secret."""
    path = Path(tempfile.mkdtemp(prefix="artoo-outside-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    secret = path / "existing.txt"
    secret.write_text("root's own\n")
    os.chmod(secret, 0o600)
    yield path
    remove_tree(path)


def test_a_command_reaches_neither_redis_nor_postgresql(celery_worker, user):
    task = (
        "exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'FLUSHALL\\r\\n' >&3\n"
        "exec 3<>/dev/tcp/127.0.0.1/5432 && echo reached"
    )
    run = finished(runs.submit(user, task))

    assert run.final_result["directive"] == "abandon"
    assert "Connection refused" in evidence(run)
    assert "reached" not in evidence(run).replace("echo reached", "")


def test_a_nested_user_namespace_is_refused(celery_worker, user):
    run = finished(runs.submit(user, "unshare -r id"))

    assert run.final_result["directive"] == "abandon"
    shown = evidence(run)
    assert "Operation not permitted" in shown and "uid=0" not in shown


def test_a_file_larger_on_the_host_than_in_the_sandbox_is_refused(
    celery_worker, user, settings
):
    settings.ARTOO_SANDBOX_APPARENT_MB = 100
    run = finished(runs.submit(user, "truncate -s 900M big.img && echo made"))

    assert "[sandbox]" in evidence(run)
    assert not (runtime.workspace_for(run) / "big.img").exists()


def test_a_directory_swapped_for_a_symlink_while_approval_waits_is_a_conflict(
    celery_worker, user, seed, outside
):
    bait = seed("bait.txt")
    area = bait.parent
    (area / "d").mkdir()
    runtime.give_to_sandbox(area / "d", runtime.sandbox_policy())
    run = runs.submit(
        user, f"echo pwned > {area}/d/existing.txt && echo more >> {bait}"
    )
    (approval,) = parked(run)
    assert [c["path"] for c in approval.changes] == [str(bait)]

    # The user's other run (or the user, by hand) swaps d for a symlink.
    (area / "d").rmdir()
    (area / "d").symlink_to(outside)
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run)

    assert (outside / "existing.txt").read_text() == "root's own\n"
    assert sorted(os.listdir(outside)) == ["existing.txt"]
    assert "while the command's effect waited; nothing applied" in evidence(run)
    assert bait.read_text() == "seed\n"


def test_a_file_made_meanwhile_is_never_clobbered_by_a_created_one(
    celery_worker, user, seed
):
    bait = seed("bait.txt")
    report = bait.parent / "report.txt"
    run = runs.submit(user, f"echo mine > {report} && echo more >> {bait}")
    (approval,) = parked(run)

    report.write_text("someone else's\n")
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run)

    assert report.read_text() == "someone else's\n"
    assert "while the command's effect waited; nothing applied" in evidence(run)
    assert bait.read_text() == "seed\n"
