"""The observable, durable bus: every inter-role message goes through ``send``.

``send`` stores a BusMessage in the caller's transaction; on commit the JSON
envelope is published on ``artoo.bus.run.<run_id>`` and ``artoo.bus.all`` and
``deliver(message_id)`` is enqueued on the recipient's queue. ``deliver`` runs the
handler that the table (``artoo_web.handlers.HANDLERS``) names for (recipient,
type) and marks the message delivered in the handler's transaction; a delivered
message is never handled twice. A failing handler is retried with backoff and
then given up (``handler_failed``). The sweeper re-enqueues what a lost enqueue
left behind (transactional outbox).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel

from artoo_web import followups, redisconn, topics
from artoo_web.models import BusMessage, Project, Run, TraceEvent
from roles import contracts, routes

log = logging.getLogger(__name__)

Handler = Callable[[BusMessage], None]
GiveUp = Callable[[BusMessage, str, int], None]


class BoundaryViolation(ValueError):
    """A message that the route table does not allow."""


@dataclass(frozen=True)
class Registration:
    handler: Handler
    # A self-committing handler opens ``delivering(msg)`` itself, around its
    # persistence only, so a long LLM or tool call holds no transaction.
    self_committing: bool


Table = dict[tuple[str, str], Registration]


def validate_payload(type_: str, payload: dict | BaseModel) -> dict:
    """Return the payload as JSON data, validated by the type's contract model."""
    model = getattr(contracts, "CONTRACTS", {}).get(type_)
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json", by_alias=True)
    if model is not None:
        payload = model.model_validate(payload).model_dump(mode="json", by_alias=True)
    return json.loads(json.dumps(payload, cls=DjangoJSONEncoder))


def send(
    run: Run | None,
    sender: str,
    recipient: str,
    type_: str,
    payload: dict | BaseModel,
    *,
    round: int | None = None,
    allow_off_route: bool = False,
    project: Project | None = None,
) -> BusMessage:
    """Store a message in the caller's transaction; publish and enqueue on commit.

    ``project`` is set on a project's messages (``artoo_web.projects``).
    """
    if not allow_off_route and not routes.is_on_route(type_, sender, recipient):
        raise BoundaryViolation(f"{type_} from {sender} to {recipient} is off-route")
    queue = routes.queue_for(recipient, type_)
    msg = BusMessage.objects.create(
        run=run,
        project=project,
        round=(run.round if run else 0) if round is None else round,
        sender=sender,
        recipient=recipient,
        type=type_,
        payload=validate_payload(type_, payload),
        # Messages to the user and the Auditor, and the fast loop's record,
        # are delivered by publication.
        delivered_at=timezone.now() if queue is None else None,
    )
    transaction.on_commit(lambda: _after_commit(msg, queue))
    return msg


def _after_commit(msg: BusMessage, queue: str | None) -> None:
    publish(msg)
    if queue is not None:
        enqueue(msg.id, queue)


def publish(msg: BusMessage) -> None:
    """Publish the envelope on its run's and project's channels and on all-runs."""
    data = json.dumps(msg.envelope(), cls=DjangoJSONEncoder)
    try:
        with redisconn.client().pipeline(transaction=False) as pipe:
            if msg.run_id:
                pipe.publish(topics.bus_run(msg.run_id), data)
            if msg.project_id:
                pipe.publish(topics.bus_project(msg.project_id), data)
            pipe.publish(topics.BUS_ALL, data)
            pipe.execute()
    except Exception:
        # The table is the record; observers catch up from it.
        log.warning("bus: publish of message %s failed", msg.id, exc_info=True)


def enqueue(message_id: int, queue: str) -> None:
    """Enqueue delivery; on failure the sweeper picks the message up later."""
    try:
        followups.enqueue(followups.DELIVER, [message_id], queue=queue)
    except Exception:
        log.warning("bus: enqueue of message %s failed", message_id, exc_info=True)


@contextmanager
def delivering(msg: BusMessage) -> Iterator[bool]:
    """Open the transaction that stores a handler's outputs and marks delivery.

    Yields False when another delivery got there first; the caller must then
    store nothing.
    """
    with transaction.atomic():
        claimed = BusMessage.objects.filter(id=msg.id, delivered_at__isnull=True)
        fresh = bool(claimed.select_for_update().values_list("id", flat=True)[:1])
        yield fresh
        if fresh:
            claimed.update(delivered_at=timezone.now())


def lease_s() -> int:
    return settings.ARTOO_LEASE_S


# A holder sets its lease every second, not once per TTL: a Redis that crashed
# lost the key, and the sweep right after the outage must find it set again.
LEASE_RENEW_S = 1.0


class Lease:
    """A Redis key held while one worker delivers a message, renewed by a heartbeat.

    A second delivery of the same message (the sweeper, or the broker after a
    visibility timeout) finds the lease and stands back; a crashed worker's lease
    expires, so the sweeper can hand its message to another worker. A Redis that
    crashed lost the key: the holder sets it again as soon as Redis answers, so
    the sweep after the outage leaves its message alone. One heartbeat thread
    per process renews every lease it holds (``Heartbeat``).
    """

    def __init__(self, key: str):
        self.key = key
        self.ttl = lease_s()
        self.failing = False

    def acquire(self) -> bool:
        try:
            taken = redisconn.client().set(self.key, "1", nx=True, ex=self.ttl)
        except Exception:
            log.warning("bus: lease unavailable for %s", self.key, exc_info=True)
            taken = True
        if taken:
            heartbeat().add(self)
        return bool(taken)

    def release(self) -> None:
        # Once dropped, no renewal of this lease lands (it would revive the key).
        heartbeat().drop(self)
        try:
            redisconn.client().delete(self.key)
        except Exception:
            log.warning("bus: lease release failed for %s", self.key)


class Heartbeat:
    """One thread that sets every lease of this process again, in one round trip."""

    def __init__(self) -> None:
        self.leases: set[Lease] = set()
        # Held across a renewal, so a dropped lease is never set after its drop.
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = 0

    def add(self, lease: Lease) -> None:
        with self.lock:
            self.leases.add(lease)
            if self.thread is None or self.pid != os.getpid():
                self.pid = os.getpid()
                self.thread = threading.Thread(
                    target=self.run, name="artoo-lease-heartbeat", daemon=True
                )
                self.thread.start()

    def drop(self, lease: Lease) -> None:
        with self.lock:
            self.leases.discard(lease)

    def run(self) -> None:
        while True:
            with self.lock:
                ttl = min((lease.ttl for lease in self.leases), default=None)
            interval = LEASE_RENEW_S if ttl is None else min(LEASE_RENEW_S, ttl / 3)
            time.sleep(interval)
            self.hold()

    def hold(self) -> None:
        """Set each held key again with a fresh expiry (it may be gone with Redis)."""
        with self.lock:
            leases = list(self.leases)
            if not leases:
                return
            try:
                with redisconn.client().pipeline(transaction=False) as pipe:
                    for lease in leases:
                        pipe.set(lease.key, "1", ex=lease.ttl)
                    pipe.execute()
            except Exception:
                for lease in leases:
                    if not lease.failing:
                        log.warning("bus: lease renewal failed for %s", lease.key)
                    lease.failing = True
            else:
                for lease in leases:
                    lease.failing = False


_heartbeat = Heartbeat()


def heartbeat() -> Heartbeat:
    """Return this process's lease heartbeat."""
    return _heartbeat


def is_leased(key: str) -> bool:
    try:
        return bool(redisconn.client().exists(key))
    except Exception:
        return False


def mark_delivered(msg: BusMessage | None) -> None:
    """Mark a message delivered (inside the caller's transaction)."""
    if msg is not None:
        BusMessage.objects.filter(id=msg.id, delivered_at__isnull=True).update(
            delivered_at=timezone.now()
        )


def deliver(message_id: int, table: Table) -> str:
    """Run the table's handler for one message; report what happened."""
    msg = BusMessage.objects.select_related("run").filter(id=message_id).first()
    if msg is None:
        return "missing"
    if msg.delivered_at is not None:
        return "already-delivered"
    reg = table.get((msg.recipient, msg.type))
    if reg is None:
        # No handler yet: leave it undelivered and visible, never drop it.
        return "no-handler"
    lease = Lease(topics.lease_key(msg.id))
    if not lease.acquire():
        return "leased"
    try:
        return _run_handler(msg, reg)
    finally:
        lease.release()


def _run_handler(msg: BusMessage, reg: Registration) -> str:
    if reg.self_committing:
        reg.handler(msg)
        return "delivered"
    with delivering(msg) as fresh:
        if not fresh:
            return "already-delivered"
        reg.handler(msg)
    return "delivered"


def handler_failed(
    message_id: int,
    exc: Exception,
    give_up: GiveUp,
    give_up_project: GiveUp | None = None,
) -> str:
    """Record a handler's error; retry with backoff, then ``give_up`` on the run.

    A project's message counts its failures on the project and then calls
    ``give_up_project``.
    """
    msg = BusMessage.objects.filter(id=message_id).first()
    if msg is not None and msg.project_id and give_up_project is not None:
        return _project_handler_failed(msg, exc, give_up_project)
    if msg is None or msg.run_id is None:
        log.exception("bus: handler of message %s failed", message_id)
        return "error"
    error = f"{type(exc).__name__}: {exc}"[:2000]
    log.error("bus: %s handler of message %s failed: %s", msg.recipient, msg.id, error)
    TraceEvent.objects.create(
        run_id=msg.run_id,
        role=msg.recipient,
        kind="handler_error",
        data={"message_id": msg.id, "type": msg.type, "error": error},
    )
    failures = TraceEvent.objects.filter(
        run_id=msg.run_id, kind="handler_error", data__message_id=msg.id
    ).count()
    return _retry_or_give_up(msg, error, failures, give_up)


def _project_handler_failed(msg: BusMessage, exc: Exception, give_up: GiveUp) -> str:
    error = f"{type(exc).__name__}: {exc}"[:2000]
    log.error("bus: %s handler of message %s failed: %s", msg.recipient, msg.id, error)
    with transaction.atomic():
        project = Project.objects.select_for_update().get(id=msg.project_id)
        failures = project.failures.get(str(msg.id), 0) + 1
        project.failures[str(msg.id)] = failures
        project.save(update_fields=["failures", "updated_at"])
    return _retry_or_give_up(msg, error, failures, give_up)


def _retry_or_give_up(msg: BusMessage, error: str, failures: int, give_up) -> str:
    attempts = settings.ARTOO_HANDLER_ATTEMPTS
    if failures < attempts:
        followups.enqueue(
            followups.DELIVER,
            [msg.id],
            countdown=2 ** (failures - 1),
            queue=routes.queue_for(msg.recipient) or "pipeline",
        )
        return "retrying"
    give_up(msg, error, attempts)
    return "failed"


def undelivered(older_than_s: int, table: Table, limit: int = 500) -> list[BusMessage]:
    """Return deliverable messages left undelivered for longer than the delay."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    pending = BusMessage.objects.filter(
        delivered_at__isnull=True, created_at__lt=cutoff
    ).order_by("id")[:limit]
    return [
        m
        for m in pending
        if (m.recipient, m.type) in table and not is_leased(topics.lease_key(m.id))
    ]


def sweep(older_than_s: int, table: Table) -> int:
    """Re-enqueue undelivered messages older than the delay; return the count."""
    count = 0
    for msg in undelivered(older_than_s, table):
        # By recipient alone: a fast-loop record stored before such records
        # were delivered by publication is still handled (``note_fast_loop``).
        queue = routes.queue_for(msg.recipient)
        if queue is not None:
            enqueue(msg.id, queue)
            count += 1
    return count
