"""The Auditor process: one event per message, reports, restart without gaps."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from artoo_web import bus, topics
from artoo_web.auditlog import AuditEventRecord, AuditReportRecord, verify_chain
from artoo_web.auditor import AuditProcess, AuditSettings, ask_now
from artoo_web.models import BusMessage
from tests.conftest import wait_until
from tests.integration.audit.conftest import clarification, cursor_at, send, store

pytestmark = pytest.mark.django_db(transaction=True)


def message_events() -> list[int]:
    return list(
        AuditEventRecord.objects.filter(source="message").values_list(
            "message_id", flat=True
        )
    )


def test_every_message_gets_one_event_and_the_cursor_follows(run):
    sent = [clarification(run, n).id for n in range(3)]
    assert AuditProcess().run_once() == 3
    assert message_events() == sent
    assert cursor_at() == sent[-1]
    assert AuditProcess().run_once() == 0
    assert message_events() == sent
    assert verify_chain() == (3, None)


def test_off_route_message_is_logged_and_published_as_a_boundary_violation(
    run, redis_client
):
    pubsub = redis_client.pubsub()
    pubsub.subscribe(topics.AUDIT)
    assert pubsub.get_message(timeout=2)["type"] == "subscribe"
    msg = send(run, "R2", "User", "FinalResult", _final(), allow_off_route=True)
    AuditProcess().run_once()
    row = AuditEventRecord.objects.get(message_id=msg.id)
    assert row.anomaly == "boundary_violation"
    assert row.detail == "unexpected R2→User for FinalResult"
    published = json.loads(pubsub.get_message(timeout=2)["data"])
    assert published["anomaly"] == "boundary_violation"
    assert published["run"] == str(run.id) and published["message_id"] == msg.id
    pubsub.close()


def _final() -> dict:
    return {
        "task_id": "t",
        "summary": "gave up",
        "loss": {"D": 1.0, "P": 0.0, "Omega": 0.5, "L": 0.8},
        "prev_directive": "refine",
        "directive": "abandon",
    }


def test_audit_query_from_the_user_is_answered_with_a_report(run):
    clarification(run)
    query = send(None, "User", "R6", "AuditQuery")
    AuditProcess().run_once()
    report = AuditReportRecord.objects.get(in_reply_to=query.id)
    assert report.trigger == "on_demand"
    assert report.payload["tasks_observed"] == 1
    answer = BusMessage.objects.get(id=report.message_id)
    assert (answer.sender, answer.recipient, answer.type) == (
        "R6",
        "User",
        "AuditReport",
    )
    assert answer.run_id is None and answer.payload["in_reply_to"] == query.id


def test_audit_query_from_a_role_is_flagged_and_not_answered(run):
    query = send(None, "R2", "R6", "AuditQuery", allow_off_route=True)
    AuditProcess().run_once()
    assert AuditEventRecord.objects.get(message_id=query.id).anomaly == (
        "boundary_violation"
    )
    assert not AuditReportRecord.objects.exists()
    assert not BusMessage.objects.filter(sender="R6").exists()


def test_window_report_is_sent_when_due_and_not_idle(run, clock):
    settings = AuditSettings(window_s=300)
    clarification(run)
    AuditProcess(settings, clock=clock).run_once()
    assert not AuditReportRecord.objects.exists()
    clock.advance(301)
    AuditProcess(settings, clock=clock).run_once()
    [report] = AuditReportRecord.objects.all()
    assert report.trigger == "periodic" and report.payload["tasks_observed"] == 1
    clock.advance(301)
    AuditProcess(settings, clock=clock).run_once()  # the report's own message only
    assert AuditReportRecord.objects.count() == 1


def test_overdue_fan_in_is_logged_once_against_its_manifest(run, clock):
    settings = AuditSettings(fanin_deadline_s=300, window_s=10_000)
    manifest = store(
        run,
        "R2",
        "R4b",
        "DispatchManifest",
        {"task_id": "t", "subtask_ids": ["a", "b"]},
    )
    store(run, "R4a", "R4b", "SubTaskOutcome", _outcome("a"))
    AuditProcess(settings, clock=clock).run_once()
    clock.advance(301)
    AuditProcess(settings, clock=clock).run_once()
    AuditProcess(settings, clock=clock).run_once()
    [row] = AuditEventRecord.objects.filter(anomaly="fanin_incomplete")
    assert (row.source, row.message_id) == ("deadline", manifest.id)
    assert "1 of 2 outcomes" in row.detail and "missing b" in row.detail
    assert verify_chain()[1] is None


def _outcome(subtask_id: str) -> dict:
    return {"subtask_id": subtask_id, "parent_task_id": "t", "status": "matched"}


def test_live_auditor_answers_audit_now(run, auditor_thread):
    auditor = auditor_thread()
    query, report = ask_now(timeout_s=10)
    assert report["in_reply_to"] == query.id
    assert report["trigger"] == "on_demand"
    auditor.stop()


def test_restart_in_the_middle_of_a_stream_misses_nothing_and_repeats_nothing(
    run, auditor_thread
):
    sent: list[int] = []
    restarting, resumed = threading.Event(), threading.Event()
    writing = threading.Thread(
        target=_write_stream, args=(run, sent, restarting, resumed)
    )
    first = auditor_thread(AuditSettings(poll_s=0.2))
    writing.start()
    wait_until(lambda: len(sent) >= 10 and cursor_at() >= sent[9], timeout=20)
    restarting.set()  # the writer goes on while the first auditor stops
    first.stop()
    stopped_at = cursor_at()
    # Messages keep arriving while no auditor runs; the second must pick them up.
    wait_until(lambda: len(sent) >= 30, timeout=20)
    second = auditor_thread(AuditSettings(poll_s=0.2))
    resumed.set()  # and the rest arrive while the second one runs
    writing.join(timeout=30)
    wait_until(lambda: cursor_at() == sent[-1], timeout=20)
    second.stop()
    assert sent[9] <= stopped_at < sent[-1]
    assert message_events() == sent
    state = AuditProcess().auditor.window
    assert state.role_messages["R1"] == len(sent) == 40
    assert verify_chain() == (40, None)


def _write_stream(
    run, sent: list[int], restarting: threading.Event, resumed: threading.Event
) -> None:
    """Write 40 messages: 20 at once, 10 once the first auditor is stopping,
    and the last 10 once the second one runs."""
    try:
        for n in range(20):
            sent.append(clarification(run, n).id)
        restarting.wait(timeout=20)
        for n in range(20, 30):
            sent.append(clarification(run, n).id)
        resumed.wait(timeout=20)
        for n in range(30, 40):
            sent.append(clarification(run, n).id)
    finally:
        connection.close()


def bus_listeners() -> int:
    from artoo_web import redisconn, topics

    return dict(redisconn.client().pubsub_numsub(topics.BUS_ALL)).get(
        topics.BUS_ALL.encode(), 0
    )


def test_message_committed_below_the_cursor_is_still_recorded_once(run, auditor_thread):
    first, late, last = (clarification(run, n) for n in range(3))
    BusMessage.objects.filter(id=late.id).delete()  # not yet committed, as it were
    AuditProcess().run_once()
    assert message_events() == [first.id, last.id]
    listeners = bus_listeners()
    auditor = auditor_thread(AuditSettings(poll_s=0.2))
    # Publish only once the auditor listens, as a real late commit would be.
    wait_until(lambda: bus_listeners() > listeners, timeout=10)
    late.save(force_insert=True)
    bus.publish(late)
    wait_until(lambda: late.id in message_events(), timeout=10)
    auditor.stop()
    assert sorted(message_events()) == [first.id, late.id, last.id]
    assert cursor_at() == last.id


def test_auditor_keeps_auditing_from_the_table_while_redis_is_unreachable(
    run, auditor_thread, settings
):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    auditor = auditor_thread(AuditSettings(poll_s=0.2))
    msg = clarification(run)
    wait_until(lambda: cursor_at() == msg.id, timeout=10)
    auditor.stop()
    assert message_events() == [msg.id]
