"""One render per run for every watcher, the same bytes to all, nothing lost."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from urllib.parse import urlparse

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from artoo_web import dashboard, frames, relay, topics
from artoo_web.hub import CLOSE_BUS_LOST, connection_name
from artoo_web.relay import CLOSE_TOO_SLOW, Outbox
from tests.conftest import wait_until
from tests.ws.test_run_stream import communicator, connect, send_messages

pytestmark = pytest.mark.django_db(transaction=True)

WATCHERS = 5


async def receive(comm) -> str:
    return await comm.receive_from(timeout=5)


async def watching(run, user, count: int, after: int = 0) -> list:
    comms = [await communicator(run, user, after=after) for _ in range(count)]
    for comm in comms:
        await connect(comm)
    return comms


async def disconnect_all(comms) -> None:
    for comm in comms:
        await comm.disconnect()


@pytest.fixture
def renders(monkeypatch) -> Counter:
    """Count the templates the stream renders, by name."""
    counted: Counter = Counter()

    def counting(render):
        def render_to_string(name, *args, **kwargs):
            counted[name] += 1
            return render(name, *args, **kwargs)

        return render_to_string

    monkeypatch.setattr(
        dashboard, "render_to_string", counting(dashboard.render_to_string)
    )
    monkeypatch.setattr(frames, "render_to_string", counting(frames.render_to_string))
    return counted


def subscribers(channel: str) -> int:
    from artoo_web import redisconn

    return dict(redisconn.client().pubsub_numsub(channel)).get(channel.encode(), 0)


async def test_a_message_is_rendered_once_for_all_watchers_who_get_the_same_bytes(
    run, user, renders
):
    [stored] = await send_messages(run, 1)
    comms = await watching(run, user, WATCHERS)
    for comm in comms:
        assert json.loads(await receive(comm))["id"] == stored
    assert await sync_to_async(subscribers)(topics.bus_run(run.id)) == 1
    renders.clear()

    [live] = await send_messages(run, 1)
    texts = [await receive(comm) for comm in comms]

    assert len(set(texts)) == 1
    frame = json.loads(texts[0])
    assert frame["id"] == live
    assert set(frame["swaps"]) == set(dashboard.parts_for("AuditQuery"))
    template = dashboard.TEMPLATE
    assert renders == Counter(
        {
            f"{template}#bus-row": 1,
            **{f"{template}#{dashboard.PARTS[p]}": 1 for p in frame["swaps"]},
        }
    )
    await disconnect_all(comms)


async def test_the_last_watcher_to_leave_unsubscribes_the_run(run, user):
    comms = await watching(run, user, 2)
    channel = topics.bus_run(run.id)
    assert await sync_to_async(subscribers)(channel) == 1
    await comms[0].disconnect()
    assert await sync_to_async(subscribers)(channel) == 1
    await comms[1].disconnect()
    await sync_to_async(wait_until)(
        lambda: subscribers(channel) == 0, timeout=5, what="unsubscribed"
    )


async def test_watchers_reconnecting_during_a_burst_lose_and_duplicate_nothing(
    run, user
):
    first = await send_messages(run, 3)
    comms = await watching(run, user, WATCHERS)
    for comm in comms:
        assert [json.loads(await receive(comm))["id"] for _ in first] == first
    await disconnect_all(comms)

    missed = await send_messages(run, 4)
    comms = await watching(run, user, WATCHERS, after=first[-1])
    # Sent while the catch-ups read the table: each arrives once, either way.
    during = await send_messages(run, 4)
    for comm in comms:
        ids = [json.loads(await receive(comm))["id"] for _ in missed + during]
        assert ids == missed + during
        assert await comm.receive_nothing(timeout=0.3)
    await disconnect_all(comms)


def publish_garbage(run) -> None:
    from artoo_web import redisconn

    client = redisconn.client()
    for data in ("not json", "[1, 2]", '{"id": "x"}', json.dumps({"run": None})):
        client.publish(topics.bus_run(run.id), data)
        client.publish(topics.AUDIT, data)


async def test_malformed_messages_on_the_channels_are_dropped_and_the_stream_goes_on(
    run, user
):
    [comm] = await watching(run, user, 1)
    await sync_to_async(publish_garbage)(run)
    sent = await send_messages(run, 1)
    assert json.loads(await receive(comm))["id"] == sent[0]
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


def kill_hub_connection() -> int:
    """Close this process's subscriber connection from the Redis side."""
    from artoo_web import redisconn

    client = redisconn.client()
    db = int(urlparse(settings.REDIS_URL).path.lstrip("/") or 0)
    killed = 0
    for entry in client.client_list():
        if entry.get("name") == connection_name() and int(entry["db"]) == db:
            killed += client.client_kill_filter(_id=entry["id"])
    return killed


async def test_a_lost_redis_connection_closes_every_stream_to_catch_up(run, user):
    comms = await watching(run, user, 2)
    assert await sync_to_async(kill_hub_connection)() == 1

    for comm in comms:
        closing = await comm.receive_output(timeout=5)
        assert (closing["type"], closing["code"]) == ("websocket.close", CLOSE_BUS_LOST)
    await disconnect_all(comms)

    sent = await send_messages(run, 2)
    [again] = await watching(run, user, 1)
    assert [json.loads(await receive(again))["id"] for _ in sent] == sent
    more = await send_messages(run, 1)
    assert json.loads(await receive(again))["id"] == more[0]
    await again.disconnect()


class Recorder:
    """A consumer's send and close, recorded."""

    def __init__(self):
        self.sent: list[str] = []
        self.closed: list[int] = []

    async def send(self, text_data: str) -> None:
        self.sent.append(text_data)

    async def close(self, code: int) -> None:
        self.closed.append(code)


async def test_a_client_whose_queue_overflows_is_closed_and_the_rest_unharmed(
    monkeypatch,
):
    monkeypatch.setattr(relay, "QUEUE_FRAMES", 3)
    slow, fast = Recorder(), Recorder()
    slow_box, fast_box = Outbox(slow), Outbox(fast)
    # The slow one's writer is not started: it stands for a client that reads
    # nothing while frames keep coming.
    fast_box.start(after=0, sent=set())
    for message_id in range(1, 6):
        slow_box.offer(message_id, f"frame {message_id}")
        fast_box.offer(message_id, f"frame {message_id}")
        await settled(fast_box.queue.empty)
    await settled(lambda: slow.closed and len(fast.sent) == 5)
    assert slow.closed == [CLOSE_TOO_SLOW]
    assert fast.sent == [f"frame {i}" for i in range(1, 6)] and not fast.closed
    fast_box.stop()


async def settled(predicate, turns: int = 100) -> None:
    """Let the loop run the outboxes' tasks until ``predicate`` holds."""
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0)


async def test_a_stream_opened_while_redis_is_unreachable_closes_with_4503(
    run, user, settings
):
    comm = await communicator(run, user)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    connected, _ = await comm.connect(timeout=10)
    assert connected
    closing = await comm.receive_output(timeout=10)
    assert (closing["type"], closing["code"]) == ("websocket.close", CLOSE_BUS_LOST)
    await comm.disconnect()
