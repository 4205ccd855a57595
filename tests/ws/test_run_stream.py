"""The live run stream: catch-up-then-live, no gaps or duplicates, authorised."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from artoo_web import bus, topics
from artoo_web.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def _communicator(run, user=None, after: int | None = None) -> WebsocketCommunicator:
    path = topics.ws_run_path(run.id)
    if after is not None:
        path += f"?after={after}"
    headers = [ORIGIN]
    if user is not None:
        headers.append(session_cookie(user))
    return WebsocketCommunicator(application, path, headers=headers)


communicator = sync_to_async(_communicator)


@sync_to_async
def send_messages(run, count: int) -> list[int]:
    return [bus.send(run, "User", "R6", "AuditQuery", {}).id for _ in range(count)]


async def receive_ids(comm: WebsocketCommunicator, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        data = json.loads(await comm.receive_from(timeout=5))
        assert f'id="msg-{data["id"]}"' in data["html"]
        ids.append(data["id"])
    return ids


async def connect(comm: WebsocketCommunicator) -> None:
    connected, code = await comm.connect(timeout=5)
    assert connected, code


async def test_client_receives_messages_after_n_then_live_ones_across_reconnect(
    run, user
):
    sent = await send_messages(run, 5)
    first = await communicator(run, user, after=sent[1])
    await connect(first)
    assert await receive_ids(first, 3) == sent[2:]
    live = await send_messages(run, 2)
    assert await receive_ids(first, 2) == live
    await first.disconnect()

    missed = await send_messages(run, 2)
    second = await communicator(run, user, after=live[-1])
    await connect(second)
    assert await receive_ids(second, 2) == missed
    more = await send_messages(run, 1)
    assert await receive_ids(second, 1) == more
    assert await second.receive_nothing(timeout=0.3)
    await second.disconnect()


async def test_anonymous_connection_is_refused(run):
    comm = await communicator(run)
    connected, _ = await comm.connect(timeout=5)
    assert not connected


async def test_another_users_run_is_refused(run, other_user):
    comm = await communicator(run, other_user)
    connected, _ = await comm.connect(timeout=5)
    assert not connected


async def test_staff_may_watch_any_run(run, staff_user):
    sent = await send_messages(run, 1)
    comm = await communicator(run, staff_user)
    await connect(comm)
    assert await receive_ids(comm, 1) == sent
    await comm.disconnect()


async def test_malformed_after_is_refused(run, user):
    comm = await communicator(run, user)
    comm.scope["query_string"] = b"after=abc"
    connected, _ = await comm.connect(timeout=5)
    assert not connected
