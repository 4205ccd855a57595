"""The live run stream: catch up from the table, then relay the bus.

The consumer subscribes to the run's channel first, then sends every stored
message with an id above ``after``, then the live ones, skipping ids already
sent: nothing published during the catch-up is lost and nothing is sent twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime

from artoo_web import redisconn, topics
from artoo_web.models import BusMessage, Run

log = logging.getLogger(__name__)

CATCH_UP_PAGE = 500
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
CLOSE_BUS_LOST = 4503


@database_sync_to_async
def can_view(user, run_id) -> bool:
    return Run.objects.visible_to(user).filter(id=run_id).exists()


@database_sync_to_async
def messages_after(run_id, after: int) -> list[BusMessage]:
    rows = BusMessage.objects.filter(run_id=run_id, id__gt=after).order_by("id")
    return list(rows[:CATCH_UP_PAGE])


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
    return render_to_string("artoo_web/run_detail.html#bus-row", {"m": msg})


class RunConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        user = self.scope["user"]
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.after = parse_after(self.scope.get("query_string", b""))
        self.relay = None
        if not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        if self.after is None:
            return await self.close(code=CLOSE_BAD_REQUEST)
        if not await can_view(user, self.run_id):
            return await self.close(code=CLOSE_FORBIDDEN)
        await self.accept()
        self.redis = redisconn.async_client()
        self.pubsub = self.redis.pubsub()
        try:
            await self.pubsub.subscribe(topics.bus_run(self.run_id))
        except Exception:
            log.warning("ws: subscribe failed for run %s", self.run_id, exc_info=True)
            return await self.close(code=CLOSE_BUS_LOST)
        self.relay = asyncio.create_task(self.stream())

    async def disconnect(self, code):
        if self.relay is not None:
            self.relay.cancel()
            self.relay = None
            await self.pubsub.aclose()
            await self.redis.aclose()

    async def stream(self):
        sent: set[int] = set()
        try:
            await self.catch_up(sent)
            async for item in self.pubsub.listen():
                if item.get("type") != "message":
                    continue
                msg = from_envelope(json.loads(item["data"]))
                if msg.id > self.after and msg.id not in sent:
                    await self.push(msg, sent)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("ws: bus lost for run %s", self.run_id, exc_info=True)
            await self.close(code=CLOSE_BUS_LOST)

    async def catch_up(self, sent: set[int]) -> None:
        last = self.after
        while rows := await messages_after(self.run_id, last):
            for msg in rows:
                await self.push(msg, sent)
            last = rows[-1].id

    async def push(self, msg: BusMessage, sent: set[int]) -> None:
        sent.add(msg.id)
        await self.send(
            text_data=json.dumps(
                {
                    "kind": "message",
                    "id": msg.id,
                    "type": msg.type,
                    "sender": msg.sender,
                    "recipient": msg.recipient,
                    "html": render_message(msg),
                }
            )
        )
