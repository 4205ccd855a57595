"""A conversational run's answer reaches the live page over the run's socket."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from artoo_web import tasks, topics
from artoo_web.asgi import application
from artoo_web.models import BusMessage, Run
from roles.llm.offline_roles import OFFLINE_GREETING

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1:8000")


@sync_to_async
def queued_run(user) -> Run:
    return Run.objects.create(owner=user, raw_input="hello")


@sync_to_async
def communicator(run, user) -> WebsocketCommunicator:
    client = Client()
    client.force_login(user)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    return WebsocketCommunicator(
        application, topics.ws_run_path(run.id), headers=[ORIGIN, cookie]
    )


@sync_to_async
def stored_types(run) -> list[str]:
    return list(BusMessage.objects.filter(run=run).values_list("type", flat=True))


async def test_the_live_page_receives_r1_s_direct_answer_and_the_run_s_end(user):
    run = await queued_run(user)
    comm = await communicator(run, user)
    connected, code = await comm.connect(timeout=5)
    assert connected, code
    try:
        assert await sync_to_async(tasks.start_run)(str(run.id)) == "started"

        frame = json.loads(await comm.receive_from(timeout=10))

        assert (frame["type"], frame["sender"], frame["recipient"]) == (
            "DirectResponse",
            "R1",
            "User",
        )
        assert "answers: Hello! No language model is configured" in frame["html"]
        header, final = frame["swaps"]["run-header"], frame["swaps"]["final-result"]
        assert 'class="status status-done"' in header
        assert "perceiving" not in header.lower()
        assert OFFLINE_GREETING.split(":")[0] in final
        assert await stored_types(run) == ["DirectResponse"]
    finally:
        await comm.disconnect()
