"""A websocket path that names no run stream is refused with a close code."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from artoo_web.asgi import application
from artoo_web.consumers import CLOSE_FORBIDDEN
from tests.ws.test_run_stream import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

CLOSE_NOT_FOUND = 4404


def communicator(path: str, cookie) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, path, headers=[ORIGIN, cookie])


async def connect(path: str, user) -> tuple[bool, int | None]:
    cookie = await sync_to_async(session_cookie)(user)
    comm = communicator(path, cookie)
    try:
        return await comm.connect(timeout=5)
    finally:
        await comm.disconnect()


async def close_code(path: str, user) -> int:
    """Return the code the server closes ``path`` with, once it has opened."""
    cookie = await sync_to_async(session_cookie)(user)
    comm = communicator(path, cookie)
    try:
        connected, _ = await comm.connect(timeout=5)
        assert connected
        closing = await comm.receive_output(timeout=5)
        assert closing["type"] == "websocket.close"
        return closing["code"]
    finally:
        await comm.disconnect()


@pytest.mark.parametrize(
    "path",
    [
        "/ws/runs/not-a-uuid/",
        "/ws/runs/1234/",
        "/ws/runs/",
        "/ws/nothing/",
        "/ws/runs/00000000-0000-0000-0000-000000000000/extra/",
    ],
)
async def test_a_malformed_path_is_refused_with_the_not_found_close_code(user, path):
    assert await close_code(path, user) == CLOSE_NOT_FOUND


async def test_an_upper_case_run_id_opens_the_run_stream(run, user):
    connected, _ = await connect(f"/ws/runs/{str(run.id).upper()}/", user)

    assert connected


async def test_a_well_formed_id_of_no_visible_run_is_still_forbidden(user):
    path = "/ws/runs/00000000-0000-0000-0000-000000000000/"

    assert await connect(path, user) == (False, CLOSE_FORBIDDEN)
