"""The run list's stream: each change of a user's runs, live, and nobody else's."""

from __future__ import annotations

import json
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from artoo_web import runs, runtime, topics
from artoo_web.asgi import application
from artoo_web.consumers import CLOSE_BAD_REQUEST, CLOSE_UNAUTHENTICATED
from artoo_web.models import Run, RunStatus
from roles.llm.records import CallRecord, Usage
from tests.ws.test_run_stream import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


def _communicator(user=None, since: int | None = None) -> WebsocketCommunicator:
    path = topics.WS_RUN_LIST
    if since is not None:
        path += f"?since={since}"
    headers = [ORIGIN]
    if user is not None:
        headers.append(session_cookie(user))
    return WebsocketCommunicator(application, path, headers=headers)


communicator = sync_to_async(_communicator)


def now_ms() -> int:
    return int(time.time() * 1000)


@sync_to_async
def set_status(run: Run, status: str) -> None:
    run.status = status
    run.save()


@sync_to_async
def submit(user, text: str) -> Run:
    return runs.submit(user, text)


async def connect(comm: WebsocketCommunicator) -> None:
    connected, code = await comm.connect(timeout=5)
    assert connected, code


async def next_row(comm: WebsocketCommunicator, timeout: float = 10) -> dict:
    frame = json.loads(await comm.receive_from(timeout=timeout))
    assert frame["kind"] == "row"
    return frame


async def test_a_row_is_pushed_when_its_run_changes_status(run, user):
    comm = await communicator(user, since=now_ms())
    await connect(comm)
    try:
        # A queued run is active: the catch-up sends its row as it is.
        first = await next_row(comm)
        assert first["id"] == f"run-{run.id}" and first["status"] == "queued"

        await set_status(run, RunStatus.RUNNING)

        row = await next_row(comm)
        assert row["id"] == f"run-{run.id}"
        assert row["status"] == "running"
        assert f'<tr id="run-{run.id}"' in row["html"]
        assert "Running" in row["html"]
    finally:
        await comm.disconnect()


@sync_to_async
def record_call(run: Run, tokens: int, cost: float) -> None:
    call = CallRecord(
        role="R1",
        model="m",
        prompt_tokens=tokens,
        completion_tokens=0,
        elapsed_ms=1,
        messages=(),
        response="",
        cost_usd=cost,
    )
    runtime.record_usage(run, "R1", Usage(calls=(call,)))


async def test_a_model_call_pushes_the_rows_new_tokens_and_cost(run, user):
    comm = await communicator(user, since=now_ms())
    await connect(comm)
    try:
        await next_row(comm)  # the active run's row, as it is

        await record_call(run, 1234, 0.5)

        row = await next_row(comm)
        assert row["id"] == f"run-{run.id}"
        assert "1234 tokens" in row["html"] and "$0.5000" in row["html"]
    finally:
        await comm.disconnect()


async def test_a_new_run_of_the_user_appears(user, purge_queues):
    comm = await communicator(user, since=now_ms())
    await connect(comm)
    try:
        new = await submit(user, "echo fresh")

        row = await next_row(comm)

        assert row["id"] == f"run-{new.id}"
        assert "echo fresh" in row["html"]
    finally:
        await comm.disconnect()


async def test_another_users_runs_never_reach_the_stream(
    user, other_user, purge_queues
):
    mine_before = await sync_to_async(Run.objects.create)(owner=user, raw_input="a")
    await set_status(mine_before, RunStatus.DONE)
    comm = await communicator(user, since=now_ms() + 60_000)
    await connect(comm)
    try:
        theirs = await submit(other_user, "echo secret")
        await set_status(theirs, RunStatus.RUNNING)
        mine = await submit(user, "echo mine")

        row = await next_row(comm)

        assert row["id"] == f"run-{mine.id}"
        assert await comm.receive_nothing(timeout=0.5)
    finally:
        await comm.disconnect()


async def test_staff_follow_every_users_runs(staff_user, other_user, purge_queues):
    comm = await communicator(staff_user, since=now_ms())
    await connect(comm)
    try:
        theirs = await submit(other_user, "echo watched")

        row = await next_row(comm)

        assert row["id"] == f"run-{theirs.id}"
    finally:
        await comm.disconnect()


async def test_a_reconnect_catches_up_on_rows_changed_meanwhile(run, user):
    since = now_ms()
    await set_status(run, RunStatus.DONE)
    comm = await communicator(user, since=since)
    await connect(comm)
    try:
        row = await next_row(comm)
        assert (row["id"], row["status"]) == (f"run-{run.id}", "done")
    finally:
        await comm.disconnect()


async def test_anonymous_and_malformed_connections_are_refused(user):
    anonymous = await communicator()
    assert await anonymous.connect(timeout=5) == (False, CLOSE_UNAUTHENTICATED)
    bad = await communicator(user)
    bad.scope["query_string"] = b"since=yesterday"
    assert await bad.connect(timeout=5) == (False, CLOSE_BAD_REQUEST)
