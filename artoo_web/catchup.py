"""The catch-up of a run stream: the stored messages after ``?after=<id>``.

The consumer attaches to the run's relay first, so whatever is published from
then on waits in its outbox; then it sends every stored message with an id
above ``after``, a page at a time, and only then lets the outbox send, skipping
the ids the catch-up sent. Nothing published during the catch-up is lost and
nothing is sent twice. The last stored frame carries every dashboard part, so
a reconnecting page is whole again.

Clients reconnecting together (a restarted web process) read the same rows:
each row's frame is rendered once per process (``ROW_CACHE`` frames kept), and
clients caught up to the same last message share one whole-dashboard render
made less than ``SHARE_S`` ago.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from channels.db import database_sync_to_async
from django.utils import timezone

from artoo_web import frames
from artoo_web.dashboard.messages import is_stuck
from artoo_web.models import BusMessage

CATCH_UP_PAGE = 500
ROW_CACHE = 5000
SHARE_S = 2.0


@dataclass
class Page:
    frames: list[tuple[int, str]] = field(default_factory=list)
    # AuditQueries young enough that R6's answer is still awaited.
    awaited: list[int] = field(default_factory=list)


class RowFrames:
    """Frames of stored messages by (id, stuck): a row changes only by sticking."""

    def __init__(self, size: int):
        self.size = size
        self.frames: OrderedDict[tuple[int, bool], str] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[int, bool]) -> str | None:
        with self.lock:
            return self.frames.get(key)

    def put(self, key: tuple[int, bool], text: str) -> None:
        with self.lock:
            self.frames[key] = text
            while len(self.frames) > self.size:
                self.frames.popitem(last=False)


_rows = RowFrames(ROW_CACHE)


def stored_page(run_id, after: int) -> Page:
    """Return the frames of the next page of stored messages after ``after``."""
    now = timezone.now()
    rows = BusMessage.objects.filter(run_id=run_id, id__gt=after).order_by("id")
    keys = rows.values_list("id", "type", "created_at", "delivered_at")
    page, found = Page(), {}
    for id_, type_, created, delivered in keys[:CATCH_UP_PAGE]:
        found[id_] = (id_, is_stuck(created, delivered, now))
        if type_ == "AuditQuery" and now - created < frames.AUDIT_WAIT:
            page.awaited.append(id_)
    missing = [id_ for id_, key in found.items() if _rows.get(key) is None]
    for msg in BusMessage.objects.filter(id__in=missing):
        _rows.put(found[msg.id], frames.message_frame(msg, now=now))
    for id_, key in found.items():
        text = _rows.get(key)
        page.frames.append((id_, text if text is not None else frame_of(id_, now)))
    return page


def frame_of(message_id: int, now) -> str:
    """Render one row that left the cache between reading and sending."""
    return frames.message_frame(BusMessage.objects.get(id=message_id), now=now)


def with_every_part(run_id, text: str) -> str:
    """Return a stored message's frame carrying every part of the dashboard."""
    data = json.loads(text)
    data["swaps"] = frames.render_swaps(run_id, [("caught-up", "")])
    return json.dumps(data)


read_page = database_sync_to_async(stored_page)
render_every_part = database_sync_to_async(with_every_part)

# (run, message id) → (render task, started): per event loop, as tasks are.
_shared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def caught_up(run_id, message_id: int, text: str) -> asyncio.Future:
    """Return the last catch-up frame, shared by clients caught up together."""
    loop = asyncio.get_running_loop()
    renders = _shared.setdefault(loop, {})
    now = time.monotonic()
    for key in [k for k, (_, made) in renders.items() if now - made > SHARE_S]:
        del renders[key]
    key = (str(run_id), message_id)
    if key not in renders:
        renders[key] = (loop.create_task(render_every_part(run_id, text)), now)
    return asyncio.shield(renders[key][0])


async def catch_up(consumer, relay, after: int) -> set[int]:
    """Send the stored messages after ``after``; return the ids sent."""
    sent: set[int] = set()
    held: tuple[int, str] | None = None
    last = after
    while True:
        page = await read_page(relay.run_id, last)
        for query_id in page.awaited:
            relay.await_report(query_id)
        if held is not None and page.frames:
            await send(consumer, sent, *held)
        for message_id, text in page.frames[:-1]:
            await send(consumer, sent, message_id, text)
        if page.frames:
            held = page.frames[-1]
            last = held[0]
        # A short page read everything stored; what came after is published
        # after it and waits in the outbox. Reading on would chase the run.
        if len(page.frames) < CATCH_UP_PAGE:
            break
    if held is not None:
        whole = await caught_up(relay.run_id, held[0], held[1])
        await send(consumer, sent, held[0], whole)
    return sent


async def send(consumer, sent: set[int], message_id: int, text: str) -> None:
    sent.add(message_id)
    await consumer.send(text_data=text)
