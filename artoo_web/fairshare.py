"""Subtask slots shared fairly between users; the rule is ``roles.fairshare``'s.

Redis holds the occupancy (``topics.FAIR_RUNNING``, ``topics.FAIR_WAITING``).
``claim`` reads it and writes its decision under WATCH, so two workers never
both take the last slot. An executing entry lives as long as its message's
delivery lease, so the slots of a crashed worker come back when its leases
lapse. A subtask that waits stays an undelivered SubTask in the bus table:
``release`` enqueues the ones a freed slot lets start, and the outbox sweeper
redelivers any whose nudge was lost, so a waiting subtask is late, never lost.
With Redis away every subtask starts, as it would with no limit.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

import redis
from django.conf import settings
from django.db import DatabaseError

from artoo_web import bus, redisconn, topics
from artoo_web.models import TERMINAL_STATUSES, BusMessage
from roles import fairshare
from roles.fairshare import Waiting

log = logging.getLogger(__name__)

STARTED = "started"
QUEUED = "queued"  # waits, for the first time
WAITING = "waiting"  # waits still


def claim(msg: BusMessage, user) -> str:
    """Take a slot for a SubTask message, or leave it waiting in its user's queue.

    Return STARTED (the caller must ``release`` it when done), QUEUED or WAITING.
    """
    slots = settings.ARTOO_SUBTASK_SLOTS
    if slots <= 0:
        return STARTED
    item = Waiting(str(msg.id), str(user), msg.created_at.timestamp())
    try:
        place, ahead = decide(item, slots)
        if place != STARTED and drop_gone(ahead):
            place, ahead = decide(item, slots)
    except redis.RedisError:
        log.warning("fair share: Redis unavailable; subtask %s starts", msg.id)
        return STARTED
    return place


def release(message_id: int) -> None:
    """Free a subtask's slot and enqueue the waiting subtasks that may start now."""
    slots = settings.ARTOO_SUBTASK_SLOTS
    if slots <= 0:
        return
    try:
        client = redisconn.client()
        client.hdel(topics.FAIR_RUNNING, str(message_id))
        ready = fairshare.startable(*occupancy(client)[:2], slots)
        if drop_gone(ready):
            ready = fairshare.startable(*occupancy(client)[:2], slots)
    except (redis.RedisError, DatabaseError):
        # The sweeper redelivers what waits; the slot's entry dies with its lease.
        log.warning("fair share: slot of message %s not released", message_id)
        return
    for item in ready:
        bus.enqueue(int(item.key), "pipeline")


def forget(message_id: int) -> None:
    """Take a subtask that will never run (its run or round ended) off the queue."""
    try:
        redisconn.client().hdel(topics.FAIR_WAITING, str(message_id))
    except redis.RedisError:
        log.warning("fair share: message %s not taken off the queue", message_id)


def decide(item: Waiting, slots: int) -> tuple[str, list[Waiting]]:
    """Decide and record, atomically, whether ``item`` starts; return the place
    and the waiting subtasks the slots would start before it."""

    def attempt(pipe) -> tuple[str, list[Waiting]]:
        running, waiting, mine, dead = occupancy(pipe, item.key)
        if mine:
            return STARTED, []
        starts, ahead = fairshare.starts_now(item, running, waiting, slots)
        known = any(w.key == item.key for w in waiting)
        pipe.multi()
        if dead:
            pipe.hdel(topics.FAIR_RUNNING, *dead)
        if starts:
            pipe.hset(topics.FAIR_RUNNING, item.key, item.user)
            pipe.hdel(topics.FAIR_WAITING, item.key)
            return STARTED, ahead
        entry = json.dumps({"user": item.user, "since": item.since})
        pipe.hsetnx(topics.FAIR_WAITING, item.key, entry)
        return (WAITING if known else QUEUED), ahead

    return redisconn.client().transaction(
        attempt, topics.FAIR_RUNNING, topics.FAIR_WAITING, value_from_callable=True
    )


def occupancy(conn, own_key: str = "") -> tuple[Counter, list[Waiting], bool, list]:
    """Read the executing subtasks per user (live leases only) and the waiting.

    Also return whether ``own_key`` executes already and the dead entries.
    """
    running = {
        k.decode(): v.decode() for k, v in conn.hgetall(topics.FAIR_RUNNING).items()
    }
    keys = list(running)
    with redisconn.client().pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.exists(topics.lease_key(int(key)))
        alive = pipe.execute() if keys else []
    live = {k for k, ok in zip(keys, alive, strict=True) if ok}
    counts = Counter(running[k] for k in live)
    waiting = [
        Waiting(k.decode(), data["user"], float(data["since"]))
        for k, v in conn.hgetall(topics.FAIR_WAITING).items()
        if (data := json.loads(v))
    ]
    return counts, waiting, own_key in live, [k for k in keys if k not in live]


def drop_gone(items: list[Waiting]) -> bool:
    """Take off the queue the subtasks that will never start (delivered, or their
    run or round ended); return True when there were some."""
    if not items:
        return False
    keys = {int(w.key) for w in items}
    pending = BusMessage.objects.filter(
        id__in=keys, type="SubTask", delivered_at__isnull=True
    ).exclude(run__status__in=TERMINAL_STATUSES)
    live = {
        key
        for key, round_, current in pending.values_list("id", "round", "run__round")
        if round_ == current
    }
    gone = [str(k) for k in keys - live]
    if gone:
        redisconn.client().hdel(topics.FAIR_WAITING, *gone)
    return bool(gone)
