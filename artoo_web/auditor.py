"""The Auditor process: tap the bus, log every message, report to the operator.

Catch-up-then-live, like the run stream: subscribe to ``artoo.bus.all`` first,
then read the stored messages above the cursor in pages, then follow the live
ones. A live message only wakes the loop; the table is read in id order and is
also polled every ``poll_s``, so a lost publication or a Redis outage delays the
Auditor but never makes it miss a message. Each message's AuditEvent row, the
cursor and the Auditor's state are written in one transaction, so a restart
resumes exactly where the last commit left off.

R6 sends only AuditReports to the User, and obeys only the User's AuditQuery.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from artoo_web import bus, redisconn, topics
from artoo_web.auditlog import (
    AuditCursor,
    AuditEventRecord,
    AuditReportRecord,
    EventSource,
)
from artoo_web.models import BusMessage
from roles.auditor import AuditConfig, Auditor, is_audit_query

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuditSettings:
    """How often the Auditor reports, polls and waits for holes in the id order."""

    window_s: float = 300.0
    fanin_deadline_s: float = 300.0
    poll_s: float = 1.0
    # A gap in the ids may be a transaction that has not committed yet; rows
    # after a gap are held back this long before the gap is taken as final.
    # None: 0 on SQLite, whose writers are serialised so ids commit in order,
    # else 1 s.
    settle_s: float | None = None
    page: int = 500
    max_backoff_s: float = 30.0


class AuditProcess:
    """Run the Auditor over the bus, from the persisted cursor."""

    def __init__(
        self,
        settings: AuditSettings | None = None,
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.settings = settings or AuditSettings()
        self.config = AuditConfig(fanin_deadline_s=self.settings.fanin_deadline_s)
        self.stop = stop or threading.Event()
        self.clock = clock
        settle_s = self.settings.settle_s
        if settle_s is None:
            settle_s = 0.0 if connection.vendor == "sqlite" else 1.0
        self.settle = timedelta(seconds=settle_s)
        self.auditor, self.cursor = self._load()

    def _load(self) -> tuple[Auditor, int]:
        with transaction.atomic():
            cursor = AuditCursor.locked()
        if cursor.state:
            auditor = Auditor.restore(cursor.state, self.config)
        else:
            auditor = Auditor(self.config, started_at=self.clock())
        return auditor, cursor.last_message_id

    def _reload(self) -> None:
        # After a failed transaction the in-memory state may be ahead of the DB.
        self.auditor, self.cursor = self._load()

    def run_once(self) -> int:
        """Process every stored message above the cursor, then the timers."""
        count = self.catch_up(settle=False)
        self.housekeeping()
        return count

    def run_forever(self) -> None:
        """Follow the bus until ``stop`` is set; survive Redis and DB outages."""
        pubsub, retry_at, backoff = None, 0.0, 0.5
        last_poll = 0.0
        while not self.stop.is_set():
            if pubsub is None and time.monotonic() >= retry_at:
                pubsub = self._subscribe()
                if pubsub is None:
                    retry_at = time.monotonic() + backoff
                    backoff = min(backoff * 2, self.settings.max_backoff_s)
                else:
                    backoff, last_poll = 0.5, 0.0
            try:
                woken = self._wait(pubsub)
            except (redis.RedisError, OSError):
                log.warning("audit: bus subscription lost; polling the table")
                self._close(pubsub)
                pubsub, retry_at = None, time.monotonic() + backoff
                woken = []
            try:
                if woken or time.monotonic() - last_poll >= self.settings.poll_s:
                    last_poll = time.monotonic()
                    self._follow(woken)
                self.housekeeping()
            except DatabaseError:
                log.exception("audit: database error; retrying")
                self._reload_quietly()
                self.stop.wait(backoff)
        self._close(pubsub)

    def _subscribe(self):
        try:
            pubsub = redisconn.client().pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(topics.BUS_ALL)
            return pubsub
        except (redis.RedisError, OSError):
            log.warning("audit: cannot subscribe to the bus; will retry")
            return None

    def _wait(self, pubsub) -> list[dict]:
        if pubsub is None:
            self.stop.wait(self.settings.poll_s)
            return []
        woken = []
        item = pubsub.get_message(timeout=self.settings.poll_s)
        while item is not None:
            if item.get("type") == "message":
                woken.append(json.loads(item["data"]))
            item = pubsub.get_message(timeout=0)
        return woken

    @staticmethod
    def _close(pubsub) -> None:
        if pubsub is not None:
            try:
                pubsub.close()
            except (redis.RedisError, OSError):
                pass

    def _reload_quietly(self) -> None:
        try:
            close_old_connections()
            self._reload()
        except DatabaseError:
            log.warning("audit: database still unavailable")

    def _follow(self, woken: list[dict]) -> None:
        close_old_connections()
        self.catch_up(settle=True)
        for envelope in woken:
            if envelope.get("id", 0) <= self.cursor:
                self._late(envelope["id"])

    def _late(self, message_id: int) -> None:
        # A message committed after a later id was processed: its id is below
        # the cursor, but no event records it yet.
        done = AuditEventRecord.objects.filter(
            source=EventSource.MESSAGE, message_id=message_id
        )
        if not done.exists():
            msg = BusMessage.objects.filter(id=message_id).first()
            if msg is not None:
                self.process(msg)

    def catch_up(self, *, settle: bool = True) -> int:
        """Process stored messages above the cursor in id order; return the count."""
        count = 0
        while not self.stop.is_set():
            rows = list(
                BusMessage.objects.filter(id__gt=self.cursor).order_by("id")[
                    : self.settings.page
                ]
            )
            for msg in rows:
                if self.stop.is_set() or (settle and self._is_unsettled(msg)):
                    return count
                self.process(msg)
                count += 1
            if len(rows) < self.settings.page:
                break
        return count

    def _is_unsettled(self, msg: BusMessage) -> bool:
        age = self.clock() - msg.created_at
        return msg.id > self.cursor + 1 and age < self.settle

    def process(self, msg: BusMessage) -> AuditEventRecord | None:
        """Record one message, answer it if it is an AuditQuery, move the cursor."""
        envelope = msg.envelope()
        try:
            with transaction.atomic():
                cursor = AuditCursor.locked()
                done = AuditEventRecord.objects.filter(
                    source=EventSource.MESSAGE, message_id=msg.id
                ).exists()
                record = None
                if not done:
                    record = self._append(self.auditor.observe(envelope))
                    if is_audit_query(envelope):
                        self._send_report("on_demand", in_reply_to=msg.id)
                self._save(cursor, max(cursor.last_message_id, msg.id))
        except Exception:
            self._reload()
            raise
        self.cursor = max(self.cursor, msg.id)
        return record

    def housekeeping(self) -> None:
        """Flag overdue fan-ins and close the report window when it is due."""
        now = self.clock()
        started = self.auditor.window.started_at or now
        due = (now - started).total_seconds() >= self.settings.window_s
        try:
            events = self.auditor.tick(now)
            if not events and not due:
                return
            with transaction.atomic():
                cursor = AuditCursor.locked()
                for event in events:
                    self._append(event, EventSource.DEADLINE)
                if due and self.auditor.is_idle():
                    self.auditor.start_window(now)
                elif due:
                    self._send_report("periodic")
                self._save(cursor, cursor.last_message_id)
        except Exception:
            self._reload()
            raise

    def _append(self, event, source=EventSource.MESSAGE) -> AuditEventRecord:
        record = AuditEventRecord.append(event, source)
        if record.anomaly != "none":
            transaction.on_commit(lambda: publish_anomaly(record))
        return record

    def _send_report(self, trigger: str, in_reply_to: int | None = None) -> None:
        report = self.auditor.report(
            self.clock(), trigger=trigger, in_reply_to=in_reply_to
        )
        msg = bus.send(None, "R6", "User", "AuditReport", report)
        AuditReportRecord.objects.create(
            report_id=report.report_id,
            trigger=report.trigger,
            period_from=report.period.from_,
            period_to=report.period.to,
            in_reply_to=in_reply_to,
            message_id=msg.id,
            payload=msg.payload,
        )

    def _save(self, cursor: AuditCursor, last_message_id: int) -> None:
        cursor.last_message_id = last_message_id
        cursor.state = self.auditor.snapshot()
        cursor.save()


def publish_anomaly(record: AuditEventRecord) -> None:
    """Publish an anomaly on the audit channel; the table stays the record."""
    try:
        redisconn.client().publish(topics.AUDIT, json.dumps(record.as_published()))
    except (redis.RedisError, OSError):
        log.warning("audit: publish of event %s failed", record.id, exc_info=True)


def ask_now(timeout_s: float, poll_s: float = 0.1) -> tuple[BusMessage, dict]:
    """Send the User's AuditQuery and return it with the AuditReport answering it.

    Raise TimeoutError when no report answers within ``timeout_s``.
    """
    pubsub = None
    try:
        pubsub = redisconn.client().pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(topics.BUS_ALL)
    except (redis.RedisError, OSError):
        pubsub = None  # the table still carries the answer
    try:
        with transaction.atomic():
            query = bus.send(None, "User", "R6", "AuditQuery", {})
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if answer := _answer(query.id, pubsub, poll_s):
                return query, answer
        raise TimeoutError(query.id)
    finally:
        AuditProcess._close(pubsub)


def _answer(query_id: int, pubsub, poll_s: float) -> dict | None:
    # A publication only wakes the wait: the answer is read from this database,
    # since pub/sub channels are shared by every database of the Redis server.
    if pubsub is None:
        time.sleep(poll_s)
    else:
        try:
            pubsub.get_message(timeout=poll_s)
        except (redis.RedisError, OSError):
            time.sleep(poll_s)
    row = AuditReportRecord.objects.filter(in_reply_to=query_id).first()
    return row.payload if row else None
