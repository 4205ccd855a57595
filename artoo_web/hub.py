"""One Redis subscription per channel and process, shared by every websocket.

A member (a run's relay, a run list's consumer) joins a channel: the first to
join subscribes it, the last to leave unsubscribes it, and the connection is
closed when no channel is left. One reader task hands each message to the
channel's members (``member.deliver(channel, data)``, which must not block).

A lost connection is never reconnected here: a silent reconnect would drop
what was published meanwhile. Every member hears ``bus_lost()`` and closes its
websockets with ``CLOSE_BUS_LOST``; the clients reconnect and catch up from the
table, and the next member to join opens a fresh connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections import deque
from typing import Protocol

from artoo_web import redisconn

log = logging.getLogger(__name__)

CLOSE_BUS_LOST = 4503


class Member(Protocol):
    def deliver(self, channel: str, data: bytes) -> None: ...

    def bus_lost(self) -> None: ...


class BusLost(ConnectionError):
    """The process's subscription to Redis was lost or could not be made."""


class Hub:
    """The pub/sub connection of one event loop and who listens to each channel."""

    def __init__(self) -> None:
        self.members: dict[str, set[Member]] = {}
        # The event set when Redis confirms the channel's latest SUBSCRIBE, and
        # those still owed a confirmation, in the order they were sent.
        self.confirmed: dict[str, asyncio.Event] = {}
        self.awaiting: dict[str, deque[asyncio.Event]] = {}
        self.pubsub = None
        self.reader: asyncio.Task | None = None
        self.lock = asyncio.Lock()

    async def join(self, channel: str, member: Member) -> None:
        """Add a member; return once Redis confirms the channel's subscription."""
        self.members.setdefault(channel, set()).add(member)
        event = self.confirmed.get(channel)
        if event is None:
            event = self.confirmed[channel] = asyncio.Event()
            self.awaiting.setdefault(channel, deque()).append(event)
            await self.command("subscribe", channel)
        try:
            await asyncio.wait_for(event.wait(), redisconn.SOCKET_TIMEOUT_S)
        except TimeoutError:
            await self.leave(channel, member)
            raise BusLost(f"no confirmation of the subscription to {channel}") from None
        if member not in self.members.get(channel, ()):
            raise BusLost(f"the subscription to {channel} was lost")

    async def leave(self, channel: str, member: Member) -> None:
        """Remove a member; unsubscribe when it was the channel's last."""
        members = self.members.get(channel)
        if not members or member not in members:
            return
        members.discard(member)
        if members:
            return
        del self.members[channel]
        self.confirmed.pop(channel, None)
        if not self.members:
            await self.close()
            return
        try:
            await self.command("unsubscribe", channel)
        except BusLost:
            pass  # every member has been told

    async def command(self, name: str, channel: str) -> None:
        # One at a time: a second command sent while the first still connects
        # would open a second connection that nobody reads.
        async with self.lock:
            if self.pubsub is None:
                self.pubsub = redisconn.async_client(connection_name()).pubsub()
            pubsub = self.pubsub
            try:
                await getattr(pubsub, name)(channel)
            except Exception as exc:
                self.lost(pubsub)
                raise BusLost(f"{name} {channel} failed") from exc
            if self.reader is None and self.pubsub is pubsub:
                self.reader = asyncio.create_task(self.read(pubsub))

    async def read(self, pubsub) -> None:
        try:
            while True:
                item = await pubsub.get_message(timeout=None)
                if item is not None:
                    self.dispatch(item)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("hub: the Redis subscription was lost", exc_info=True)
            self.lost(pubsub)

    def dispatch(self, item: dict) -> None:
        channel = item["channel"].decode()
        if item["type"] == "message":
            for member in list(self.members.get(channel, ())):
                try:
                    member.deliver(channel, item["data"])
                except (ValueError, TypeError, KeyError, AttributeError):
                    # Anyone may publish on a channel: a malformed message is
                    # dropped, and the connection and the other members go on.
                    log.warning("hub: malformed message on %s dropped", channel)
        elif item["type"] == "subscribe":
            waiting = self.awaiting.get(channel)
            if waiting:
                waiting.popleft().set()

    def lost(self, pubsub) -> None:
        """Tell every member the subscription is gone; start afresh on next join."""
        if pubsub is not self.pubsub:
            return
        members = {m for ms in self.members.values() for m in ms}
        # Joiners still waiting wake up, find themselves gone and fail.
        for events in self.awaiting.values():
            for event in events:
                event.set()
        self.members, self.confirmed = {}, {}
        closing = asyncio.create_task(close_quietly(self.discard()))
        _closing.add(closing)
        closing.add_done_callback(_closing.discard)
        for member in members:
            member.bus_lost()

    async def close(self) -> None:
        await close_quietly(self.discard())

    def discard(self):
        """Forget the connection and stop its reader; return the connection."""
        pubsub, self.pubsub = self.pubsub, None
        reader, self.reader = self.reader, None
        self.awaiting = {}
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
        return pubsub


async def close_quietly(pubsub) -> None:
    if pubsub is None:
        return
    try:
        await pubsub.aclose()
        await pubsub.connection_pool.disconnect()
    except Exception:
        log.debug("hub: closing the Redis connection failed", exc_info=True)


# Closings under way, held so that the loop does not drop them half done.
_closing: set[asyncio.Task] = set()


def connection_name() -> str:
    """Return the client name of this process's subscriber connection."""
    return f"artoo-hub-{os.getpid()}"


# One hub per event loop: tests run each in a loop of its own.
_hubs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """Return this event loop's hub."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = Hub()
    return found
