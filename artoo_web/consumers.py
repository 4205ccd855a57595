"""The live run stream: catch up from the table, then relay the bus.

The consumer subscribes to the run's channel first, then sends every stored
message with an id above ``after``, then the live ones, skipping ids already
sent: nothing published during the catch-up is lost and nothing is sent twice.

Each frame carries the bus row and ``swaps``: element id → re-rendered dashboard
fragment for the parts the message affects. The last frame of a catch-up
carries every part, so a reconnecting page is whole again. Anomalies of the run
published by the Auditor arrive as ``{"kind": "audit", "swaps": …}``.

The run list's stream (``RunListConsumer``) follows the same road for rows:
subscribe to the user's run notices (``artoo_web.runfeed``; staff: every
run's), send the rows changed since the page was rendered, then each row that
changes, as ``{"kind": "row", "id": "run-<id>", "html": …}`` rendered from the
page's own partial.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections import OrderedDict
from datetime import UTC, datetime
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from artoo_web import dashboard, redisconn, runlist, topics
from artoo_web.auditlog import AuditReportRecord
from artoo_web.models import BusMessage, Run

log = logging.getLogger(__name__)

CATCH_UP_PAGE = 500
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
CLOSE_BUS_LOST = 4503
RENDER_CACHE = 512
RENDER_SHARE_S = 2.0
AUDIT_WAIT_S = 60.0
AUDIT_POLL_S = 0.25
# Rows a list stream remembers having sent (to skip unchanged ones).
SENT_ROWS = 1000


@database_sync_to_async
def can_view(user, run_id) -> bool:
    return Run.objects.visible_to(user).filter(id=run_id).exists()


@database_sync_to_async
def messages_after(run_id, after: int) -> list[BusMessage]:
    rows = BusMessage.objects.filter(run_id=run_id, id__gt=after).order_by("id")
    return list(rows[:CATCH_UP_PAGE])


@database_sync_to_async
def render_parts(run_id, parts) -> dict[str, str]:
    return dashboard.render_parts(run_id, parts)


@database_sync_to_async
def answered_queries(query_ids: set[int]) -> set[int]:
    rows = AuditReportRecord.objects.filter(in_reply_to__in=query_ids)
    return set(rows.values_list("in_reply_to", flat=True))


def parse_after(query_string: bytes) -> int | None:
    """Return the ``after`` id of the query string (0 when absent), None if bad."""
    values = parse_qs(query_string.decode("latin-1")).get("after", ["0"])
    try:
        after = int(values[-1] or 0)
    except ValueError:
        return None
    return after if after >= 0 else None


def from_envelope(envelope: dict) -> BusMessage:
    """Return an unsaved BusMessage built from a published envelope."""
    return BusMessage(
        id=envelope["id"],
        run_id=envelope["run"],
        round=envelope["round"],
        sender=envelope["sender"],
        recipient=envelope["recipient"],
        type=envelope["type"],
        payload=envelope["payload"],
        created_at=parse_datetime(envelope["created_at"]),
        delivered_at=parse_datetime(envelope.get("delivered_at") or ""),
    )


def render_message(msg: BusMessage) -> str:
    dashboard.decorate(msg)
    return render_to_string("artoo_web/run_detail.html#bus-row", {"m": msg})


def frame(msg: BusMessage, swaps: dict[str, str] | None = None) -> str:
    return json.dumps(
        {
            "kind": "message",
            "id": msg.id,
            "type": msg.type,
            "sender": msg.sender,
            "recipient": msg.recipient,
            "html": render_message(msg),
            "swaps": swaps or {},
        }
    )


def is_recent(msg: BusMessage) -> bool:
    if msg.created_at is None:
        return False
    return (timezone.now() - msg.created_at).total_seconds() < AUDIT_WAIT_S


# Every consumer of a run in this process wants the same fragments for a live
# message: the first one renders them, the others await the same task.
_renders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shared_render(msg: BusMessage, parts=None) -> asyncio.Future:
    """Render the parts a message affects (or ``parts``) once per process."""
    parts = tuple(parts or dashboard.parts_for(msg.type))
    loop = asyncio.get_running_loop()
    cache = _renders.setdefault(loop, OrderedDict())
    key = (msg.id, parts)
    task, made = cache.get(key, (None, 0.0))
    # Only renders made moments ago are shared: state also changes without
    # messages (audit anomalies, approvals), and a later reader wants it fresh.
    if task is None or time.monotonic() - made > RENDER_SHARE_S:
        task = loop.create_task(render_parts(msg.run_id, parts))
        cache[key] = (task, time.monotonic())
        cache.move_to_end(key)
        while len(cache) > RENDER_CACHE:
            cache.popitem(last=False)
    return asyncio.shield(task)


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Refuse a websocket path that names no stream (``/ws/runs/not-a-uuid/``)."""

    async def connect(self):
        # Accepted first so that the client reads the code: a refused handshake
        # reaches a browser as a bare 1006.
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


class Subscriber(AsyncWebsocketConsumer):
    """A consumer that relays Redis channels it subscribed to before opening."""

    relay: asyncio.Task | None = None

    async def open_subscribed(self, *channels: str) -> bool:
        """Subscribe, then accept; on failure open and close with 4503."""
        self.redis = redisconn.async_client()
        self.pubsub = self.redis.pubsub()
        try:
            # Subscribed before the client hears "open": nothing it causes after
            # that (an anomaly, a message, a row) can be published unseen.
            await self.pubsub.subscribe(*channels)
            await self.confirmed(len(channels))
        except Exception:
            log.warning("ws: subscribe to %s failed", channels, exc_info=True)
            await self.close_redis()
            await self.accept()
            await self.close(code=CLOSE_BUS_LOST)
            return False
        await self.accept()
        self.relay = asyncio.create_task(self.stream())
        return True

    async def confirmed(self, count: int) -> None:
        """Wait until Redis confirms the subscriptions: from then on none is lost."""
        deadline = time.monotonic() + redisconn.SOCKET_TIMEOUT_S
        while count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no subscription confirmation from Redis")
            item = await self.pubsub.get_message(timeout=left)
            if item is not None and item.get("type") == "subscribe":
                count -= 1

    async def disconnect(self, code):
        if self.relay is not None:
            self.relay.cancel()
            self.relay = None
            await self.close_redis()

    async def close_redis(self) -> None:
        try:
            await self.pubsub.aclose()
            await self.redis.aclose()
        except Exception:
            log.debug("ws: closing Redis failed", exc_info=True)

    async def stream(self) -> None:
        raise NotImplementedError


class RunConsumer(Subscriber):
    async def connect(self):
        user = self.scope["user"]
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.after = parse_after(self.scope.get("query_string", b""))
        self.watcher = None
        self.pending_queries: dict[int, float] = {}
        if not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        if self.after is None:
            return await self.close(code=CLOSE_BAD_REQUEST)
        if not await can_view(user, self.run_id):
            return await self.close(code=CLOSE_FORBIDDEN)
        self.run_channel = topics.bus_run(self.run_id).encode()
        await self.open_subscribed(self.run_channel.decode(), topics.AUDIT)

    async def disconnect(self, code):
        if self.watcher is not None:
            self.watcher.cancel()
            self.watcher = None
        await super().disconnect(code)

    async def stream(self):
        sent: set[int] = set()
        try:
            await self.catch_up(sent)
            async for item in self.pubsub.listen():
                if item.get("type") != "message":
                    continue
                data = json.loads(item["data"])
                if item.get("channel") != self.run_channel:
                    await self.relay_audit(data)
                    continue
                msg = from_envelope(data)
                if msg.id > self.after and msg.id not in sent:
                    await self.push_live(msg, sent)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: bus lost for run %s", self.run_id, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)

    async def catch_up(self, sent: set[int]) -> None:
        """Send the stored rows; the last one carries every dashboard part."""
        held: BusMessage | None = None
        last = self.after
        while rows := await messages_after(self.run_id, last):
            if held is not None:
                await self.push(held, sent)
            for msg in rows[:-1]:
                await self.push(msg, sent)
            held, last = rows[-1], rows[-1].id
        if held is not None:
            # Clients reconnecting together after a restart share one render.
            everything = await shared_render(held, dashboard.PARTS)
            await self.push(held, sent, everything)

    async def push_live(self, msg: BusMessage, sent: set[int]) -> None:
        sent.add(msg.id)
        swaps = await shared_render(msg)
        await self.push(msg, sent, swaps)

    async def push(self, msg: BusMessage, sent: set[int], swaps=None) -> None:
        sent.add(msg.id)
        await self.send(text_data=frame(msg, swaps))
        if msg.type == "AuditQuery" and is_recent(msg):
            self.await_report(msg.id)

    async def relay_audit(self, data: dict) -> None:
        if str(data.get("run") or "") != str(self.run_id):
            return
        swaps = await render_parts(self.run_id, ["audit-panel"])
        await self.send(
            text_data=json.dumps({"kind": "audit", "event": data, "swaps": swaps})
        )

    def await_report(self, query_id: int) -> None:
        """Push the audit panel again when R6 answers this query."""
        self.pending_queries[query_id] = time.monotonic() + AUDIT_WAIT_S
        if self.watcher is None or self.watcher.done():
            self.watcher = asyncio.create_task(self.watch_reports())

    async def watch_reports(self) -> None:
        while self.pending_queries:
            await asyncio.sleep(AUDIT_POLL_S)
            now = time.monotonic()
            for qid in [q for q, t in self.pending_queries.items() if t < now]:
                del self.pending_queries[qid]
            answered = await answered_queries(set(self.pending_queries))
            if not answered:
                continue
            for qid in answered:
                self.pending_queries.pop(qid, None)
            swaps = await render_parts(self.run_id, ["audit-panel"])
            await self.send(text_data=json.dumps({"kind": "swaps", "swaps": swaps}))


@database_sync_to_async
def rows_changed_since(user, since) -> list[dict]:
    return [row_frame(run) for run in runlist.changed_since(user, since)]


@database_sync_to_async
def row_now(user, run_id) -> dict | None:
    run = runlist.row_of(user, run_id)
    return None if run is None else row_frame(run)


def row_frame(run: Run) -> dict:
    return {
        "kind": "row",
        "id": f"run-{run.id}",
        "status": run.status,
        "created": run.created_at.isoformat(),
        "at": int(timezone.now().timestamp() * 1000),
        "html": runlist.render_row(run),
    }


def parse_since(query_string: bytes):
    """Return the ``since`` time (epoch ms) of the query string, None if bad.

    Absent, it is now: a client without one has just rendered every row.
    """
    values = parse_qs(query_string.decode("latin-1")).get("since")
    if not values:
        return timezone.now()
    try:
        millis = int(values[-1])
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


class RunListConsumer(Subscriber):
    """The run list's rows, live: the user's own runs, or every run for staff.

    Staff's list page shows every run, so their stream carries every run's row.
    """

    async def connect(self):
        self.user = self.scope["user"]
        self.since = parse_since(self.scope.get("query_string", b""))
        self.sent: dict[str, str] = {}
        if not self.user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        if self.since is None:
            return await self.close(code=CLOSE_BAD_REQUEST)
        channel = (
            topics.RUNS_ALL if self.user.is_staff else topics.runs_of(self.user.pk)
        )
        await self.open_subscribed(channel)

    async def stream(self) -> None:
        try:
            for row in await rows_changed_since(self.user, self.since):
                await self.push(row)
            while True:
                for run_id in await self.changed_runs():
                    await self.push(await row_now(self.user, run_id))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: run notices lost for %s", self.user, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)

    async def changed_runs(self) -> list[str]:
        """Wait for a notice; return its run and those of the notices queued behind.

        A busy run sends many notices: each of its rows is rendered once a batch.
        """
        runs = []
        item = await self.pubsub.get_message(timeout=None)
        while item is not None:
            if item.get("type") == "message":
                runs.append(str(json.loads(item["data"]).get("run")))
            item = await self.pubsub.get_message(timeout=0)
        return list(dict.fromkeys(runs))

    async def push(self, row: dict | None) -> None:
        # Notices repeat (a run saved twice in one transaction): send changes only.
        if row is None or self.sent.get(row["id"]) == row["html"]:
            return
        self.sent.pop(row["id"], None)
        self.sent[row["id"]] = row["html"]
        if len(self.sent) > SENT_ROWS:
            del self.sent[next(iter(self.sent))]
        await self.send(text_data=json.dumps(row))
