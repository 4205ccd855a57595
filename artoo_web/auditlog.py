"""The Auditor's own records: an append-only, hash-chained log of AuditEvents.

Each AuditEventRecord stores the previous row's hash and
``hash = sha256(prev_hash + canonical JSON of its own content)``, so editing,
removing or reordering a row breaks the chain at that row (``verify_chain``).

The audit page must not walk a million rows per visit: ``check_chain`` walks
only the rows after the end of the chain last verified (``ChainCheck``), after
checking that this end is still the row it verified. An edit further back shows
at the next full walk: ``manage.py audit --verify``, the ``verify-audit-chain``
beat task (every ``ARTOO_AUDIT_VERIFY_EVERY_S``, 6 hours by default), or a
visit that finds the verified end changed. The page says when the chain was
last walked in full.
The log has no foreign key to runs or messages: deleting a run leaves its audit
trail intact, and nothing outside the Auditor writes here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import models
from django.utils import timezone

GENESIS = "0" * 64
# Rows read per query by verify_chain.
VERIFY_PAGE = 2000


class AppendOnlyError(RuntimeError):
    """An attempt to change or remove an audit record."""


def canonical(data: dict[str, Any]) -> str:
    """Return the canonical JSON text of ``data`` (sorted keys, no spaces)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chain_hash(prev_hash: str, content: dict[str, Any]) -> str:
    """Return the SHA-256 of the previous hash followed by the content's JSON."""
    return hashlib.sha256((prev_hash + canonical(content)).encode()).hexdigest()


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat(timespec="microseconds") if value else None


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class AppendOnly(models.Model):
    """A record that can be inserted, never updated or deleted through Django."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")


class EventSource(models.TextChoices):
    MESSAGE = "message"  # one event per bus message
    DEADLINE = "deadline"  # a fan-in deadline passed with outcomes missing


class AuditEventRecord(AppendOnly):
    """One AuditEvent, chained to the one before it."""

    id = models.BigAutoField(primary_key=True)
    event_id = models.CharField(max_length=64)
    source = models.CharField(max_length=8, choices=EventSource.choices)
    message_id = models.BigIntegerField(null=True, blank=True)
    run_id = models.CharField(max_length=64, blank=True)
    timestamp = models.DateTimeField()
    from_role = models.CharField(max_length=8)
    to_role = models.CharField(max_length=8)
    message_type = models.CharField(max_length=40)
    anomaly = models.CharField(max_length=32, default="none")
    detail = models.TextField(blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    prev_hash = models.CharField(max_length=64, editable=False)
    hash = models.CharField(max_length=64, unique=True, editable=False)

    class Meta:
        ordering = ["id"]
        verbose_name = "audit event"
        constraints = [
            models.UniqueConstraint(
                fields=["message_id"],
                condition=models.Q(source="message"),
                name="audit_one_event_per_message",
            )
        ]
        indexes = [
            models.Index(fields=["run_id", "id"]),
            models.Index(
                fields=["anomaly", "id"],
                name="audit_anomalies",
                condition=~models.Q(anomaly="none"),
            ),
        ]

    def __str__(self) -> str:
        return f"audit event {self.id}: #{self.message_id} {self.anomaly}"

    def save(self, *args, **kwargs):
        # Chained at insert time, inside the caller's transaction, which holds
        # the AuditCursor lock so appends never race for the same predecessor.
        if self._state.adding:
            last = AuditEventRecord.objects.order_by("-id").values_list("hash")[:1]
            self.prev_hash = last[0][0] if last else GENESIS
            self.hash = chain_hash(self.prev_hash, self.content())
        super().save(*args, **kwargs)

    def content(self) -> dict[str, Any]:
        """Return the fields the hash covers, as JSON data."""
        return {
            "event_id": self.event_id,
            "source": self.source,
            "message_id": self.message_id,
            "run_id": self.run_id,
            "timestamp": _iso(self.timestamp),
            "from_role": self.from_role,
            "to_role": self.to_role,
            "message_type": self.message_type,
            "anomaly": self.anomaly,
            "detail": self.detail,
            "recorded_at": _iso(self.recorded_at),
        }

    @classmethod
    def append(cls, event, source: str = EventSource.MESSAGE) -> AuditEventRecord:
        """Store a ``roles.contracts.AuditEvent`` at the end of the chain."""
        return cls.objects.create(
            event_id=event.event_id,
            source=source,
            message_id=event.message_id,
            run_id=event.run_id,
            timestamp=event.timestamp,
            from_role=event.from_role,
            to_role=event.to_role,
            message_type=event.message_type,
            anomaly=event.anomaly,
            detail=event.detail or "",
        )

    def as_published(self) -> dict[str, Any]:
        """Return the JSON published on the audit channel for an anomaly."""
        data = self.content()
        data.update(run=self.run_id or None, audit_event=self.id, hash=self.hash)
        return data


class AuditReportRecord(AppendOnly):
    """One AuditReport sent to the operator."""

    id = models.BigAutoField(primary_key=True)
    report_id = models.CharField(max_length=64, unique=True)
    trigger = models.CharField(max_length=12)
    period_from = models.DateTimeField()
    period_to = models.DateTimeField()
    # The AuditQuery this report answers, for an on-demand report.
    in_reply_to = models.BigIntegerField(null=True, blank=True, db_index=True)
    # The bus message that carried the report to the operator.
    message_id = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "audit report"

    def __str__(self) -> str:
        return f"{self.trigger} audit report {self.report_id}"


class AuditCursor(models.Model):
    """The Auditor's place on the bus and its window state (a single row)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_message_id = models.BigIntegerField(default=0)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "audit cursor"

    def __str__(self) -> str:
        return f"audit cursor at message {self.last_message_id}"

    @classmethod
    def locked(cls) -> AuditCursor:
        """Return the cursor row locked for this transaction, creating it if new."""
        return cls.objects.select_for_update().get_or_create(pk=1)[0]


class ChainCheck(models.Model):
    """The end of the chain last verified, and when it was last walked in full
    (a single row)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    through_id = models.BigIntegerField(default=0)
    through_hash = models.CharField(max_length=64, default=GENESIS)
    count = models.BigIntegerField(default=0)
    full_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "audit chain check"

    def __str__(self) -> str:
        return f"audit chain verified through event {self.through_id}"


@dataclass(frozen=True)
class ChainStatus:
    """What a check found: events verified, the first break, the last full walk."""

    verified: int
    broken: str | None
    full_at: datetime | None


def verify_chain(page: int = VERIFY_PAGE) -> tuple[int, str | None]:
    """Walk the chain in id order; return (rows verified, first break or None).

    The rows are read ``page`` at a time, each page a query of its own after the
    last id seen, so memory stays flat however long the log is and no cursor or
    snapshot is held open for the whole walk. A walk that finds no break is
    recorded as the end last verified and the time of the last full walk.
    """
    count, broken, last_id, last_hash = _walk(0, GENESIS, 0, page)
    if broken is None:
        _record(last_id, last_hash, count, full=True)
    return count, broken


def check_chain(page: int = VERIFY_PAGE) -> ChainStatus:
    """Verify the rows after the end last verified; walk in full when there is
    no such end yet or it is not the row it was."""
    mark = ChainCheck.objects.filter(pk=1).first()
    if mark is None or not _still_there(mark):
        count, broken = verify_chain(page)
        mark = ChainCheck.objects.filter(pk=1).first()
        return ChainStatus(count, broken, mark.full_at if mark else None)
    count, broken, last_id, last_hash = _walk(
        mark.through_id, mark.through_hash, mark.count, page
    )
    if broken is None and last_id != mark.through_id:
        _record(last_id, last_hash, count, full=False)
    return ChainStatus(count, broken, mark.full_at)


def _still_there(mark: ChainCheck) -> bool:
    """Return whether the verified end is the row, with the hash, it was."""
    if not mark.through_id:
        return True
    row = AuditEventRecord.objects.filter(id=mark.through_id).first()
    try:
        return (
            row is not None
            and row.hash == mark.through_hash
            and chain_hash(row.prev_hash, row.content()) == row.hash
        )
    except (ValueError, TypeError):
        return False


def _record(last_id: int, last_hash: str, count: int, *, full: bool) -> None:
    now = timezone.now()
    fields = {
        "through_id": last_id,
        "through_hash": last_hash,
        "count": count,
        "checked_at": now,
    }
    if full:
        fields["full_at"] = now
    ChainCheck.objects.update_or_create(pk=1, defaults=fields)


def _walk(
    last_id: int, expected: str, count: int, page: int
) -> tuple[int, str | None, int, str]:
    """Verify the rows after ``last_id``, which must chain from ``expected``;
    return (rows verified in all, first break or None, last id, its hash)."""
    try:
        while rows := list(
            AuditEventRecord.objects.filter(id__gt=last_id).order_by("id")[:page]
        ):
            for row in rows:
                if broken := _break_at(row, expected):
                    return count, broken, last_id, expected
                expected, count, last_id = row.hash, count + 1, row.id
    except (ValueError, TypeError) as exc:
        broken = f"chain broken after audit event {last_id}: unreadable row: {exc}"
        return count, broken, last_id, expected
    return count, None, last_id, expected


def _break_at(row: AuditEventRecord, expected: str) -> str | None:
    """Return why ``row`` breaks the chain that should continue from ``expected``."""
    if row.prev_hash != expected:
        return (
            f"chain broken at audit event {row.id} (message #{row.message_id}): its "
            f"prev_hash does not match the hash of the event before it"
        )
    if chain_hash(row.prev_hash, row.content()) != row.hash:
        return (
            f"chain broken at audit event {row.id} (message #{row.message_id}): its "
            f"content does not match its hash"
        )
    return None
