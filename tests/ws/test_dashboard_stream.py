"""Dashboard swaps over the run stream: fragments for each message, audit pushes."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from artoo_web import bus, dashboard
from artoo_web.auditlog import AuditEventRecord, AuditReportRecord
from artoo_web.auditor import publish_anomaly
from artoo_web.models import Approval, Run
from roles.contracts import AuditEvent
from tests.ws.test_run_stream import communicator, connect, send_messages

pytestmark = pytest.mark.django_db(transaction=True)


async def receive(comm) -> dict:
    return json.loads(await comm.receive_from(timeout=5))


@sync_to_async
def ask_approval(run) -> Approval:
    approval = Approval.objects.create(
        run=run, subtask_id="s1", tool="shell", command="rm <a>.txt", reason="Law 1"
    )
    bus.send(
        run,
        "R3",
        "User",
        "ApprovalRequest",
        {
            "approval_id": str(approval.id),
            "subtask_id": "s1",
            "tool": "shell",
            "command": "rm <a>.txt",
            "reason": "Law 1",
        },
    )
    return approval


@sync_to_async
def anomaly_for(run, detail: str) -> None:
    record = AuditEventRecord.append(
        AuditEvent(
            event_id=detail,
            timestamp=timezone.now(),
            run_id=str(run.id),
            from_role="R3",
            to_role="R7",
            message_type="SubTask",
            anomaly="boundary_violation",
            detail=detail,
        )
    )
    publish_anomaly(record)


@sync_to_async
def answer_query(query_id: int) -> None:
    now = timezone.now()
    AuditReportRecord.objects.create(
        report_id=f"r{query_id}",
        trigger="on_demand",
        period_from=now,
        period_to=now,
        in_reply_to=query_id,
        payload={"tasks_observed": 3},
    )


async def caught_up(run, user):
    """Connect once a stored message has come back: the catch-up is over."""
    await send_messages(run, 1)
    comm = await communicator(run, user)
    await connect(comm)
    await receive(comm)
    return comm


async def test_a_live_approval_request_swaps_the_prompt_and_the_header(run, user):
    comm = await caught_up(run, user)
    await ask_approval(run)
    data = await receive(comm)
    assert data["type"] == "ApprovalRequest"
    assert set(data["swaps"]) == {"run-header", "prompts"}
    assert data["swaps"]["prompts"].lstrip().startswith('<section id="prompts"')
    assert "rm &lt;a&gt;.txt" in data["swaps"]["prompts"]
    await comm.disconnect()


async def test_the_last_catch_up_frame_carries_every_part(run, user):
    sent = await send_messages(run, 3)
    comm = await communicator(run, user)
    await connect(comm)
    frames = [await receive(comm) for _ in sent]
    assert [f["id"] for f in frames] == sent
    assert [bool(f["swaps"]) for f in frames] == [False, False, True]
    assert set(frames[-1]["swaps"]) == set(dashboard.PARTS)
    await comm.disconnect()


async def test_an_anomaly_of_this_run_is_pushed_and_others_are_not(run, user):
    other = await sync_to_async(Run.objects.create)(owner=user, raw_input="x")
    comm = await communicator(run, user)
    await connect(comm)
    await anomaly_for(other, "not mine")
    await anomaly_for(run, "mine <b>")
    data = await receive(comm)
    assert data["kind"] == "audit"
    panel = data["swaps"]["audit-panel"]
    assert "mine &lt;b&gt;" in panel and "not mine" not in panel
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_the_report_answering_a_live_audit_query_is_pushed(run, user):
    comm = await communicator(run, user)
    await connect(comm)
    [query_id] = await send_messages(run, 1)
    first = await receive(comm)
    assert "waiting for the Auditor" in first["swaps"]["audit-panel"]
    await answer_query(query_id)
    data = await receive(comm)
    assert data["kind"] == "swaps"
    assert "3 tasks observed" in data["swaps"]["audit-panel"]
    assert "waiting for the Auditor" not in data["swaps"]["audit-panel"]
    await comm.disconnect()
