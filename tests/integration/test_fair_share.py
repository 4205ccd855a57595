"""Two users share the pipeline: one user's long runs do not hold back another's.

A real Celery worker with the 8 threads a pipeline worker used to have, the
real database and Redis, the offline model (each line is a shell command).
Alice's commands block until the test releases them.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker

from artoo_web import bus, fairshare, followups, runs, topics
from artoo_web.models import BusMessage, Run, RunStatus, TraceEvent
from tests.conftest import wait_until
from tests.integration.test_pipeline_offline import finished

THREADS = 8
SLOTS = THREADS - 2
LONG_RUNS = 10


@pytest.fixture
def fair_keys(redis_client):
    redis_client.delete(topics.FAIR_RUNNING, topics.FAIR_WAITING)
    yield redis_client
    redis_client.delete(topics.FAIR_RUNNING, topics.FAIR_WAITING)


@pytest.fixture
def release_file():
    """A file Alice's commands wait on; the sandbox sees what is written into it."""
    # Under /var/tmp: each sandbox has a /tmp of its own.
    folder = Path(tempfile.mkdtemp(prefix="artoo-release-", dir="/var/tmp"))
    folder.chmod(0o755)
    path = folder / "go"
    path.touch(mode=0o644)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pipeline_worker(transactional_db, purge_queues, fair_keys, settings, release_file):
    """A worker of 8 threads on every queue, with 6 of them for subtasks."""
    from artoo_web.celery import app

    settings.ARTOO_SUBTASK_SLOTS = SLOTS
    settings.ARTOO_SHELL_TIMEOUT_S = 600
    settings.ARTOO_ALLOWED_PATHS = [release_file.parent]
    with start_worker(
        app,
        pool="threads",
        concurrency=THREADS,
        perform_ping_check=False,
        queues=["pipeline", "memory"],
        shutdown_timeout=60,
    ) as worker:
        yield worker


def started(listed: list[Run]) -> int:
    return TraceEvent.objects.filter(run__in=listed, kind="subtask_started").count()


def test_ten_long_runs_of_one_user_do_not_hold_back_anothers_one_line_run(
    pipeline_worker, user, other_user, release_file
):
    command = f"until [ -s {release_file} ]; do sleep 0.2; done; echo released"
    long_runs = [runs.submit(user, command) for _ in range(LONG_RUNS)]
    try:
        wait_until(
            lambda: started(long_runs) >= SLOTS - 1,
            timeout=120,
            what="alice's subtasks executing",
        )
        wait_until(
            lambda: (
                BusMessage.objects.filter(run__in=long_runs, type="SubTask").count()
                == LONG_RUNS
            ),
            timeout=120,
            what="all of alice's subtasks dispatched",
        )
        submitted = time.monotonic()
        short = finished(runs.submit(other_user, "echo hi # expect: hi"), timeout=90)
        delay = time.monotonic() - submitted
        print(
            f"\nbob's one-line run: submit → FinalResult {delay:.2f} s "
            f"while alice's {LONG_RUNS} long runs were active"
        )
        assert short.status == RunStatus.DONE
        assert release_file.read_text() == ""
        assert not any(Run.objects.get(id=r.id).is_terminal for r in long_runs)
        # Alice had every slot but the one kept for another user.
        assert started(long_runs) == SLOTS - 1
    finally:
        release_file.write_text("go")
    ended = [finished(r, timeout=180) for r in long_runs]
    assert {r.status for r in ended} == {RunStatus.DONE}
    for run in long_runs:
        assert started([run]) == 1
        assert BusMessage.objects.filter(run=run, type="SubTaskOutcome").count() == 1
        assert BusMessage.objects.filter(run=run, type="FinalResult").count() == 1
    waited = TraceEvent.objects.filter(run__in=long_runs, kind="subtask_waiting")
    assert waited.count() == LONG_RUNS - (SLOTS - 1)
    pending = BusMessage.objects.filter(run__in=long_runs, delivered_at__isnull=True)
    wait_until(lambda: not pending.exists(), what="every message delivered")


# -- the slots' bookkeeping in Redis ---------------------------------------------


def subtask(run: Run) -> BusMessage:
    """Store an undelivered SubTask of the run (no enqueue: nothing commits it)."""
    return BusMessage.objects.create(
        run=run, round=run.round, sender="R2", recipient="R3", type="SubTask"
    )


def queued_deliveries(redis_client) -> list[int]:
    """Return the message ids whose delivery waits on the pipeline queue."""
    found = []
    for raw in redis_client.lrange("pipeline", 0, -1):
        envelope = json.loads(raw)
        if envelope["headers"]["task"] == followups.DELIVER:
            args = json.loads(base64.b64decode(envelope["body"]))[0]
            found.append(args[0])
    return found


@pytest.fixture
def two_slots(settings, fair_keys, purge_queues):
    settings.ARTOO_SUBTASK_SLOTS = 2
    return purge_queues


@pytest.fixture
def lease():
    """Hold a message's delivery lease, as a worker delivering it does."""
    held = []

    def take(msg: BusMessage) -> bus.Lease:
        taken = bus.Lease(topics.lease_key(msg.id))
        assert taken.acquire()
        held.append(taken)
        return taken

    yield take
    for taken in held:
        taken.release()


@pytest.mark.django_db
def test_a_user_past_their_share_waits_and_another_starts(
    two_slots, lease, run, other_user
):
    first, second = subtask(run), subtask(run)
    bobs = subtask(Run.objects.create(owner=other_user, raw_input="echo hi"))
    lease(first)
    assert fairshare.claim(first, run.owner_id) == fairshare.STARTED
    assert fairshare.claim(second, run.owner_id) == fairshare.QUEUED
    assert fairshare.claim(second, run.owner_id) == fairshare.WAITING
    lease(bobs)
    assert fairshare.claim(bobs, other_user.pk) == fairshare.STARTED


@pytest.mark.django_db
def test_a_freed_slot_enqueues_the_subtask_waiting_for_it(two_slots, lease, run):
    first, second = subtask(run), subtask(run)
    lease(first)
    assert fairshare.claim(first, run.owner_id) == fairshare.STARTED
    assert fairshare.claim(second, run.owner_id) == fairshare.QUEUED
    assert queued_deliveries(two_slots) == []
    fairshare.release(first.id)
    assert queued_deliveries(two_slots) == [second.id]
    lease(second)
    assert fairshare.claim(second, run.owner_id) == fairshare.STARTED


@pytest.mark.django_db
def test_the_slot_of_a_worker_that_died_comes_back_when_its_lease_lapses(
    two_slots, lease, run
):
    first, second = subtask(run), subtask(run)
    held = lease(first)
    assert fairshare.claim(first, run.owner_id) == fairshare.STARTED
    assert fairshare.claim(second, run.owner_id) == fairshare.QUEUED
    held.release()  # the worker died: nobody renews the lease, nor releases
    assert fairshare.claim(second, run.owner_id) == fairshare.STARTED


@pytest.mark.django_db
def test_a_waiting_subtask_of_an_ended_run_gives_up_its_place(
    two_slots, lease, run, other_user, django_user_model
):
    third = django_user_model.objects.create_user("dave", password="dave-pass-123")
    bobs_run = Run.objects.create(owner=other_user, raw_input="echo hi")
    first, bobs, bobs_next = subtask(run), subtask(bobs_run), subtask(bobs_run)
    daves = subtask(Run.objects.create(owner=third, raw_input="echo hi"))
    lease(first)
    assert fairshare.claim(first, run.owner_id) == fairshare.STARTED
    lease(bobs)
    assert fairshare.claim(bobs, other_user.pk) == fairshare.STARTED
    # Both slots taken: bob's next waits ahead of dave's; then bob cancels.
    assert fairshare.claim(bobs_next, other_user.pk) == fairshare.QUEUED
    assert fairshare.claim(daves, third.pk) == fairshare.QUEUED
    Run.objects.filter(id=bobs_run.id).update(status=RunStatus.CANCELLED)
    fairshare.release(bobs.id)
    assert queued_deliveries(two_slots) == [daves.id]


@pytest.mark.django_db
def test_zero_slots_starts_every_subtask(settings, fair_keys, run):
    settings.ARTOO_SUBTASK_SLOTS = 0
    for msg in [subtask(run) for _ in range(20)]:
        assert fairshare.claim(msg, run.owner_id) == fairshare.STARTED
    assert fair_keys.hlen(topics.FAIR_RUNNING) == 0
