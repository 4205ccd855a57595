"""The bus: stored in the sender's transaction, published and enqueued on commit,
delivered once, swept when an enqueue was lost."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from artoo_web import bus, tasks, topics
from artoo_web.handlers import HANDLERS
from artoo_web.models import BusMessage, Run, TraceEvent
from tests.conftest import wait_until

ROUTE = ("R1", "ClarificationAnswer")
PAYLOAD = {"answer": "the staging server"}


@pytest.fixture
def recording_handler():
    """Register a handler for User → R1 ClarificationAnswer that leaves a trace."""

    def handle(msg: BusMessage) -> None:
        TraceEvent.objects.create(
            run=msg.run, role="R1", kind="test-handled", data={"message": msg.id}
        )

    saved = HANDLERS.get(ROUTE)
    HANDLERS[ROUTE] = bus.Registration(handle, self_committing=False)
    yield
    if saved is None:
        HANDLERS.pop(ROUTE, None)
    else:
        HANDLERS[ROUTE] = saved


@pytest.fixture
def subscriber(redis_client, run):
    pubsub = redis_client.pubsub()
    pubsub.subscribe(topics.bus_run(run.id))
    assert pubsub.get_message(timeout=2)["type"] == "subscribe"
    yield pubsub
    pubsub.close()


def handled(run) -> int:
    return TraceEvent.objects.filter(run=run, kind="test-handled").count()


def age(msg: BusMessage) -> None:
    """Date a message two minutes back, past the sweeper's delay."""
    BusMessage.objects.filter(id=msg.id).update(
        created_at=timezone.now() - timedelta(seconds=120)
    )


def sweep() -> int:
    """Run one outbox sweep in the worker; return how many it re-enqueued."""
    result = tasks.sweep_outbox.apply_async(queue="pipeline", ignore_result=False)
    return result.get(timeout=10)


def send_answer(run) -> BusMessage:
    return bus.send(run, "User", "R1", "ClarificationAnswer", PAYLOAD)


@pytest.mark.django_db(transaction=True)
def test_committed_message_is_published_and_enqueued(run, subscriber, purge_queues):
    with transaction.atomic():
        msg = send_answer(run)
        assert purge_queues.llen("pipeline") == 0
    published = subscriber.get_message(timeout=2)
    assert json.loads(published["data"])["id"] == msg.id
    assert purge_queues.llen("pipeline") == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("sender", "recipient", "type_", "payload"),
    [
        (
            "R3",
            "R4a",
            "ExecutionResult",
            {"subtask_id": "s1", "status": "completed", "output": "37"},
        ),
        (
            "R4a",
            "R3",
            "CorrectionSignal",
            {"subtask_id": "s1", "attempt_number": 1, "what_to_do": "read it"},
        ),
    ],
)
def test_the_fast_loops_record_is_delivered_by_publication_alone(
    run, subscriber, purge_queues, sender, recipient, type_, payload
):
    with transaction.atomic():
        msg = bus.send(run, sender, recipient, type_, payload)
    published = subscriber.get_message(timeout=2)
    assert json.loads(published["data"])["id"] == msg.id
    assert BusMessage.objects.get(id=msg.id).delivered_at is not None
    assert purge_queues.llen("pipeline") == 0
    assert bus.undelivered(0, HANDLERS) == []


@pytest.mark.django_db(transaction=True)
def test_rolled_back_message_is_neither_published_nor_enqueued(
    run, subscriber, purge_queues
):
    with pytest.raises(RuntimeError), transaction.atomic():
        send_answer(run)
        raise RuntimeError("the handler failed")
    assert not BusMessage.objects.exists()
    assert subscriber.get_message(timeout=0.5) is None
    assert purge_queues.llen("pipeline") == 0


@pytest.mark.django_db(transaction=True)
def test_off_route_message_is_refused_and_stores_nothing(run):
    with pytest.raises(bus.BoundaryViolation):
        bus.send(run, "R3", "R3", "SubTask", {})
    assert not BusMessage.objects.exists()


def test_message_is_delivered_once_and_redelivery_is_a_noop(
    celery_worker, run, recording_handler
):
    msg = send_answer(run)
    wait_until(lambda: BusMessage.objects.get(id=msg.id).delivered_at)
    assert handled(run) == 1
    result = tasks.deliver.apply_async(
        args=[msg.id], queue="pipeline", ignore_result=False
    )
    assert result.get(timeout=10) == "already-delivered"
    assert handled(run) == 1


@pytest.fixture
def without_handler():
    """Unregister User → R1 ClarificationAnswer, as if that role were not deployed."""
    saved = HANDLERS.pop(ROUTE, None)
    yield
    if saved is not None:
        HANDLERS[ROUTE] = saved


def test_message_without_handler_stays_undelivered(celery_worker, run, without_handler):
    msg = send_answer(run)
    result = tasks.deliver.apply_async(
        args=[msg.id], queue="pipeline", ignore_result=False
    )
    assert result.get(timeout=10) == "no-handler"
    assert BusMessage.objects.get(id=msg.id).delivered_at is None
    assert bus.undelivered(0, HANDLERS) == []


def test_sweeper_delivers_a_message_whose_enqueue_was_lost(
    celery_worker, run, recording_handler
):
    # Rows committed by a worker that died before it could enqueue delivery.
    lost, recent = (
        BusMessage.objects.create(
            run=run,
            sender="User",
            recipient="R1",
            type="ClarificationAnswer",
            payload=PAYLOAD,
        )
        for _ in range(2)
    )
    age(lost)
    assert sweep() == 1
    wait_until(lambda: BusMessage.objects.get(id=lost.id).delivered_at)
    assert handled(run) == 1
    assert BusMessage.objects.get(id=recent.id).delivered_at is None


@pytest.fixture
def broken_handler():
    """Register a User → R1 handler that always raises, as a bug would."""

    def handle(msg: BusMessage) -> None:
        raise RuntimeError("handler bug")

    saved = HANDLERS.get(ROUTE)
    HANDLERS[ROUTE] = bus.Registration(handle, self_committing=False)
    yield
    if saved is None:
        HANDLERS.pop(ROUTE, None)
    else:
        HANDLERS[ROUTE] = saved


def test_a_handler_that_keeps_failing_ends_the_run_with_the_error(
    celery_worker, run, broken_handler, settings
):
    msg = send_answer(run)
    run = wait_until(
        lambda: Run.objects.filter(id=run.id, status="failed").first(), timeout=20
    )
    assert "RuntimeError: handler bug" in run.final_result["summary"]
    assert TraceEvent.objects.filter(run=run, kind="handler_error").count() == 3
    assert BusMessage.objects.get(id=msg.id).delivered_at is not None
    assert BusMessage.objects.filter(run=run, type="FinalResult").count() == 1


@pytest.mark.django_db(transaction=True)
def test_sweeper_leaves_a_message_that_a_worker_is_still_handling(
    run, recording_handler, purge_queues
):
    from artoo_web import topics

    msg = BusMessage.objects.create(
        run=run,
        sender="User",
        recipient="R1",
        type="ClarificationAnswer",
        payload=PAYLOAD,
    )
    age(msg)
    lease = bus.Lease(topics.lease_key(msg.id))
    assert lease.acquire()
    try:
        assert bus.sweep(60, HANDLERS) == 0
        assert bus.deliver(msg.id, HANDLERS) == "leased"
    finally:
        lease.release()
    assert bus.sweep(60, HANDLERS) == 1


def test_one_heartbeat_sets_again_every_held_lease_that_redis_lost(redis_client):
    leases = [bus.Lease(f"artoo.test.lease.{n}") for n in range(3)]
    for lease in leases:
        assert lease.acquire()
    try:
        # A Redis that crashed lost the keys: the holders set them again.
        redis_client.delete(*(lease.key for lease in leases))
        wait_until(
            lambda: all(redis_client.exists(lease.key) for lease in leases),
            what="every held lease set again",
        )
        beating = [
            t for t in threading.enumerate() if t.name == "artoo-lease-heartbeat"
        ]
        assert len(beating) == 1
    finally:
        for lease in leases:
            lease.release()


def test_a_released_lease_is_never_set_again(redis_client):
    held, released = bus.Lease("artoo.test.lease.held"), bus.Lease("artoo.test.lease.x")
    assert held.acquire() and released.acquire()
    released.release()
    try:
        redis_client.delete(held.key)
        # Once the heartbeat has renewed what it holds, the released key stays gone.
        wait_until(lambda: redis_client.exists(held.key), what="held lease renewed")
        assert not redis_client.exists(released.key)
    finally:
        held.release()
    assert not redis_client.exists(held.key)


def test_sweeper_delivers_a_fast_loop_record_stored_before_publication_sufficed(
    celery_worker, run
):
    # A row of the former scheme, which delivered these records by a handler.
    old = BusMessage.objects.create(
        run=run,
        sender="R3",
        recipient="R4a",
        type="ExecutionResult",
        payload={"subtask_id": "s1", "status": "completed", "output": "37"},
    )
    age(old)
    assert sweep() == 1
    wait_until(lambda: BusMessage.objects.get(id=old.id).delivered_at)
