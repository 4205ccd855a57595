"""The live run stream: catch up from the table, then relay the bus.

The consumer subscribes to the run's channel first, then sends every stored
message with an id above ``after``, then the live ones, skipping ids already
sent: nothing published during the catch-up is lost and nothing is sent twice.

Each frame carries the bus row and ``swaps``: element id → re-rendered dashboard
fragment for the parts the message affects. The last frame of a catch-up
carries every part, so a reconnecting page is whole again. Anomalies of the run
published by the Auditor arrive as ``{"kind": "audit", "swaps": …}``, and the
audit panel again as ``{"kind": "swaps", …}`` when R6 answers a recent query.

The road: the process holds one Redis subscription per channel
(``artoo_web.hub``); a run's relay (``artoo_web.relay``) renders each message
once for all its watchers (``artoo_web.frames``) and queues the same text for
each; ``artoo_web.catchup`` sends the stored part. A lost Redis connection
closes every stream with ``CLOSE_BUS_LOST``, and the clients catch up.

A project's page (``ProjectConsumer``) follows the same road: it joins the
project's bus channel and its owner's run notices, sends every part of the
page on connect (a reconnecting page is whole again), then again once a batch
whenever a message of the project or a change of one of its Runs arrives, as
``{"kind": "swaps", "swaps": …}`` rendered from the page's own partials.

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
import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import timezone

from artoo_web import catchup, frames, relay, runlist, topics
from artoo_web.hub import CLOSE_BUS_LOST, BusLost, hub
from artoo_web.models import Project, Run

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_SLOW = relay.CLOSE_TOO_SLOW
# Rows a list stream remembers having sent (to skip unchanged ones).
SENT_ROWS = 1000


@database_sync_to_async
def can_view(user, run_id) -> bool:
    return Run.objects.visible_to(user).filter(id=run_id).exists()


def parse_after(query_string: bytes) -> int | None:
    """Return the ``after`` id of the query string (0 when absent), None if bad."""
    values = parse_qs(query_string.decode("latin-1")).get("after", ["0"])
    try:
        after = int(values[-1] or 0)
    except ValueError:
        return None
    return after if after >= 0 else None


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Refuse a websocket path that names no stream (``/ws/runs/not-a-uuid/``)."""

    async def connect(self):
        # Accepted first so that the client reads the code: a refused handshake
        # reaches a browser as a bare 1006.
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


async def refuse_bus_lost(consumer: AsyncWebsocketConsumer) -> None:
    """Open and close with 4503: the client retries, then catches up."""
    await consumer.accept()
    await consumer.close(code=CLOSE_BUS_LOST)


class RunConsumer(AsyncWebsocketConsumer):
    run_relay: relay.Relay | None = None
    stream: asyncio.Task | None = None

    async def connect(self):
        user = self.scope["user"]
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.after = parse_after(self.scope.get("query_string", b""))
        if not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        if self.after is None:
            return await self.close(code=CLOSE_BAD_REQUEST)
        if not await can_view(user, self.run_id):
            return await self.close(code=CLOSE_FORBIDDEN)
        self.outbox = relay.Outbox(self)
        try:
            # Subscribed before the client hears "open": nothing it causes after
            # that (an anomaly, a message) can be published unseen.
            self.run_relay = await relay.attach(self.run_id, self.outbox)
        except BusLost:
            log.warning("ws: subscribing to run %s failed", self.run_id, exc_info=True)
            return await refuse_bus_lost(self)
        await self.accept()
        self.stream = asyncio.create_task(self.catch_up())

    async def catch_up(self) -> None:
        try:
            sent = await catchup.catch_up(self, self.run_relay, self.after)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: catch-up of run %s failed", self.run_id, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)
            return
        self.outbox.start(self.after, sent)

    async def disconnect(self, code):
        if self.stream is not None:
            self.stream.cancel()
            self.stream = None
        if self.run_relay is not None:
            await relay.detach(self.run_relay, self.outbox)
            self.run_relay = None


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


class RunListConsumer(AsyncWebsocketConsumer):
    """The run list's rows, live: the user's own runs, or every run for staff.

    Staff's list page shows every run, so their stream carries every run's row.
    The consumer is the hub's member for its channel: notices queue up here
    and each changed row is rendered once a batch.
    """

    channel: str | None = None
    stream: asyncio.Task | None = None

    async def connect(self):
        self.user = self.scope["user"]
        self.since = parse_since(self.scope.get("query_string", b""))
        self.sent: dict[str, str] = {}
        self.notices: list[str] = []
        self.noticed = asyncio.Event()
        if not self.user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        if self.since is None:
            return await self.close(code=CLOSE_BAD_REQUEST)
        channel = (
            topics.RUNS_ALL if self.user.is_staff else topics.runs_of(self.user.pk)
        )
        try:
            await hub().join(channel, self)
        except BusLost:
            log.warning("ws: subscribing to %s failed", channel, exc_info=True)
            return await refuse_bus_lost(self)
        self.channel = channel
        await self.accept()
        self.stream = asyncio.create_task(self.relay_rows())

    def deliver(self, channel: str, data: bytes) -> None:
        self.notices.append(str(json.loads(data).get("run")))
        self.noticed.set()

    def bus_lost(self) -> None:
        self.channel = None
        asyncio.create_task(self.close(code=CLOSE_BUS_LOST))

    async def disconnect(self, code):
        if self.stream is not None:
            self.stream.cancel()
            self.stream = None
        if self.channel is not None:
            await hub().leave(self.channel, self)
            self.channel = None

    async def relay_rows(self) -> None:
        try:
            for row in await rows_changed_since(self.user, self.since):
                await self.push(row)
            while True:
                for run_id in await self.changed_runs():
                    await self.push(await row_now(self.user, run_id))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: run rows failed for %s", self.user, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)

    async def changed_runs(self) -> list[str]:
        """Wait for notices; return their runs, each once.

        A busy run sends many notices: each of its rows is rendered once a batch.
        """
        await self.noticed.wait()
        self.noticed.clear()
        runs, self.notices = self.notices, []
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


@database_sync_to_async
def project_channels(user, project_id) -> tuple[str, ...] | None:
    """Return the channels of a project ``user`` may see, None when not."""
    project = Project.objects.visible_to(user).filter(id=project_id).first()
    if project is None:
        return None
    return (topics.bus_project(project.id), topics.runs_of(project.owner_id))


render_project = frames.in_render_thread(frames.project_frame)
has_project_run = frames.in_render_thread(frames.has_project_run)


class ProjectConsumer(AsyncWebsocketConsumer):
    """A project's page, live: its parts again whenever the project changes."""

    channels: tuple[str, ...] = ()
    stream: asyncio.Task | None = None

    async def connect(self):
        user = self.scope["user"]
        self.project_id = str(self.scope["url_route"]["kwargs"]["project_id"])
        self.changed = asyncio.Event()
        self.runs: set[str] = set()
        self.touched = True  # the first frame makes the page whole
        if not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        channels = await project_channels(user, self.project_id)
        if channels is None:
            return await self.close(code=CLOSE_FORBIDDEN)
        try:
            for channel in channels:
                self.channels += (channel,)
                await hub().join(channel, self)
        except BusLost:
            log.warning("ws: subscribing to project %s failed", self.project_id)
            await self.leave_all()
            return await refuse_bus_lost(self)
        await self.accept()
        self.changed.set()
        self.stream = asyncio.create_task(self.relay_parts())

    def deliver(self, channel: str, data: bytes) -> None:
        event = json.loads(data)
        if channel == topics.bus_project(self.project_id):
            self.touched = True
        else:
            self.runs.add(str(uuid.UUID(str(event["run"]))))
        self.changed.set()

    def bus_lost(self) -> None:
        self.channels = ()
        asyncio.create_task(self.close(code=CLOSE_BUS_LOST))

    async def disconnect(self, code):
        if self.stream is not None:
            self.stream.cancel()
            self.stream = None
        await self.leave_all()

    async def leave_all(self) -> None:
        channels, self.channels = self.channels, ()
        for channel in channels:
            await hub().leave(channel, self)

    async def relay_parts(self) -> None:
        sent = None
        try:
            while True:
                await self.changed.wait()
                self.changed.clear()
                touched, runs = self.touched, self.runs
                self.touched, self.runs = False, set()
                if not touched and not await has_project_run(self.project_id, runs):
                    continue
                frame = await render_project(self.project_id)
                if frame != sent:
                    await self.send(text_data=frame)
                    sent = frame
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: project %s parts failed", self.project_id, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)
