"""A run's fan-out: one relay per run and process feeds all its websockets.

The relay is the hub's member for the run's channel and the audit channel. It
reads what arrives in batches, has ``frames`` render each batch once (in the
render thread, off the event loop), and puts the same text in each
subscriber's ``Outbox``. An outbox is a bounded queue with a task that sends
from it, so a slow client delays nobody else; a client whose queue overflows
is closed with ``CLOSE_TOO_SLOW`` and catches up when it reconnects.

With ``ARTOO_LIVE_TIMINGS`` on, each batch logs how long it waited and rendered.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections import deque

from django.conf import settings

from artoo_web import frames, topics
from artoo_web.hub import CLOSE_BUS_LOST, BusLost, hub

log = logging.getLogger(__name__)

CLOSE_TOO_SLOW = 4408
# Frames a client may have waiting: a catch-up of many pages holds the live
# ones meanwhile.
QUEUE_FRAMES = 2000
AUDIT_POLL_S = 0.25
ENVELOPE = {
    "id",
    "run",
    "round",
    "sender",
    "recipient",
    "type",
    "payload",
    "created_at",
}


class Outbox:
    """One consumer's frames waiting to be sent, and the task that sends them."""

    def __init__(self, consumer):
        self.consumer = consumer
        self.queue: asyncio.Queue = asyncio.Queue(QUEUE_FRAMES)
        self.writer: asyncio.Task | None = None
        self.closing: asyncio.Task | None = None

    def offer(self, message_id: int | None, text: str) -> None:
        if self.closing is not None:
            return
        try:
            self.queue.put_nowait((message_id, text))
        except asyncio.QueueFull:
            log.warning("ws: a client fell %d frames behind", QUEUE_FRAMES)
            self.close(CLOSE_TOO_SLOW)

    def start(self, after: int, sent: set[int]) -> None:
        """Send what waits and what comes, skipping ids the catch-up sent."""
        self.writer = asyncio.create_task(self.write(after, sent))

    async def write(self, after: int, sent: set[int]) -> None:
        while True:
            message_id, text = await self.queue.get()
            if message_id is not None and (message_id <= after or message_id in sent):
                continue
            await self.consumer.send(text_data=text)

    def close(self, code: int) -> None:
        if self.closing is None:
            self.closing = asyncio.create_task(self.consumer.close(code=code))

    def stop(self) -> None:
        if self.writer is not None:
            self.writer.cancel()
            self.writer = None


class Relay:
    """The hub's member for one run: render each batch once, offer it to all."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.channels = (topics.bus_run(run_id), topics.AUDIT)
        self.outboxes: set[Outbox] = set()
        self.inbox: deque[tuple[str, dict, float]] = deque()
        self.wake = asyncio.Event()
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self.task: asyncio.Task | None = None
        self.awaited: dict[int, float] = {}
        self.watcher: asyncio.Task | None = None

    async def start(self) -> None:
        try:
            for channel in self.channels:
                await hub().join(channel, self)
        except BusLost as exc:
            self.ready.set_exception(exc)
            self.ready.exception()  # those who wait see it; nobody else need
            raise
        self.task = asyncio.create_task(self.relay())
        self.ready.set_result(True)

    def deliver(self, channel: str, data: bytes) -> None:
        event = json.loads(data)
        if channel == topics.AUDIT:
            if str(event.get("run") or "") != self.run_id:
                return
            self.inbox.append(("audit", event, time.perf_counter()))
        else:
            if not ENVELOPE <= event.keys() or not isinstance(event["id"], int):
                raise ValueError("not a bus envelope")
            self.inbox.append(("message", event, time.perf_counter()))
        self.wake.set()

    def bus_lost(self) -> None:
        self.stop()
        for outbox in list(self.outboxes):
            outbox.close(CLOSE_BUS_LOST)

    async def relay(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.inbox:
                kind, batch, since = self.take()
                try:
                    made = await self.render(kind, batch)
                except Exception:
                    # Clients that miss a frame reconnect and read it from the table.
                    log.warning("ws: render of run %s failed", self.run_id, exc_info=1)
                    self.bus_lost()
                    return
                self.fan_out(made)
                if settings.ARTOO_LIVE_TIMINGS:
                    self.log_timing(made, since)

    def log_timing(self, made: list[tuple], since: float) -> None:
        log.info(
            "live: run %s ids %s to %d clients in %.1f ms from Redis",
            self.run_id,
            [message_id for message_id, _ in made],
            len(self.outboxes),
            (time.perf_counter() - since) * 1000,
        )

    def take(self) -> tuple[str, list[dict], float]:
        """Pop the next audit event alone, or every message queued in a row."""
        kind, first, since = self.inbox.popleft()
        batch = [first]
        while kind == "message" and self.inbox and self.inbox[0][0] == "message":
            batch.append(self.inbox.popleft()[1])
        return kind, batch, since

    async def render(self, kind: str, batch: list[dict]) -> list[tuple]:
        if kind == "audit":
            return [(None, await render_audit(self.run_id, batch[0]))]
        for envelope in batch:
            if envelope["type"] == "AuditQuery":
                self.await_report(envelope["id"])
        return await render_live(self.run_id, batch)

    def fan_out(self, made: list[tuple]) -> None:
        for outbox in list(self.outboxes):
            for message_id, text in made:
                outbox.offer(message_id, text)

    def await_report(self, query_id: int) -> None:
        """Push the audit panel again when R6 answers this query."""
        self.awaited[query_id] = time.monotonic() + frames.AUDIT_WAIT.total_seconds()
        if self.watcher is None or self.watcher.done():
            self.watcher = asyncio.create_task(self.watch_reports())

    async def watch_reports(self) -> None:
        while self.awaited:
            await asyncio.sleep(AUDIT_POLL_S)
            now = time.monotonic()
            for query_id in [q for q, t in self.awaited.items() if t < now]:
                del self.awaited[query_id]
            answered = await answered_queries(set(self.awaited))
            if not answered:
                continue
            for query_id in answered:
                self.awaited.pop(query_id, None)
            self.fan_out([(None, await render_report(self.run_id))])

    def stop(self) -> None:
        if _relays().get(self.run_id) is self:
            del _relays()[self.run_id]
        for task in (self.task, self.watcher):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        self.task = self.watcher = None


render_live = frames.in_render_thread(frames.live_frames)
render_audit = frames.in_render_thread(frames.audit_frame)
render_report = frames.in_render_thread(frames.report_frame)
answered_queries = frames.in_render_thread(frames.answered_queries)

# One registry per event loop: tests run each in a loop of its own.
_registries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _relays() -> dict[str, Relay]:
    return _registries.setdefault(asyncio.get_running_loop(), {})


async def attach(run_id, outbox: Outbox) -> Relay:
    """Add an outbox to the run's relay, subscribing the run if it is the first.

    Returns once the subscription is confirmed: from then on nothing published
    on the run is missed. Raises ``BusLost`` when Redis cannot be reached.
    """
    run_id = str(run_id)
    relay = _relays().get(run_id)
    if relay is None:
        relay = _relays()[run_id] = Relay(run_id)
        relay.outboxes.add(outbox)
        try:
            await relay.start()
        except BusLost:
            relay.stop()
            for channel in relay.channels:
                await hub().leave(channel, relay)
            raise
    else:
        relay.outboxes.add(outbox)
        await asyncio.shield(relay.ready)
    return relay


async def detach(relay: Relay, outbox: Outbox) -> None:
    """Remove an outbox; the last one out stops the relay and unsubscribes."""
    outbox.stop()
    relay.outboxes.discard(outbox)
    if relay.outboxes:
        return
    relay.stop()
    for channel in relay.channels:
        await hub().leave(channel, relay)
