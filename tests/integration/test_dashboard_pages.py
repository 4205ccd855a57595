"""The memory browser, the audit page, the run list and the admin's extra views."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from artoo_web.auditlog import AuditEventRecord
from artoo_web.models import BusMessage, Run
from roles.contracts import AuditEvent
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db


def remember(client, text: str, **extra) -> BusMessage:
    data = {"text": text, "level": "C", "space": "global:user", "entity": "env:local"}
    response = client.post(reverse("memory-remember"), {**data, **extra})
    assert response.status_code == 200, response.content
    msg = BusMessage.objects.filter(type="Megram").latest("id")
    wait_until(lambda: BusMessage.objects.get(id=msg.id).delivered_at, timeout=20)
    return msg


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_staff_remembers_searches_and_forgets_a_megram(
    client, celery_worker, staff_user
):
    client.force_login(staff_user)
    msg = remember(client, "Prefer <rg> over grep")
    assert (msg.sender, msg.recipient, msg.run_id) == ("User", "R5", None)
    page = client.get(reverse("memory"), {"content": "rg>"}).content.decode()
    assert "Prefer &lt;rg&gt; over grep" in page
    assert 'id="memory-counts"' in page
    megram_id = page.split('id="megram-')[1].split('"')[0]
    missing = client.get(reverse("memory"), {"content": "no such text"})
    assert "Prefer &lt;rg&gt;" not in missing.content.decode()
    forgot = client.post(reverse("memory-forget"), {"id_prefix": megram_id[:8]})
    assert "Forgot 1 Megram(s)." in forgot.content.decode()
    assert megram_id not in client.get(reverse("memory")).content.decode()


def test_memory_page_says_the_worker_is_unavailable_instead_of_crashing(
    client, user, purge_queues, settings
):
    settings.ARTOO_WEB_MEMORY_TIMEOUT_S = 1
    client.force_login(user)
    response = client.get(reverse("memory"))
    assert response.status_code == 200
    assert "memory worker unavailable" in response.content.decode()


def test_remember_and_forget_are_staff_only(client, user, purge_queues):
    client.force_login(user)
    page = client.get(reverse("memory"), {"space": "x"})
    assert 'action="/memory/remember"' not in page.content.decode()
    assert client.post(reverse("memory-remember"), {"text": "x"}).status_code == 403
    assert (
        client.post(reverse("memory-forget"), {"id_prefix": "abcd"}).status_code == 403
    )
    assert not BusMessage.objects.filter(type="Megram").exists()


@pytest.mark.parametrize(
    ("url", "data", "reason"),
    [
        (
            "memory-remember",
            {"text": "   ", "level": "C", "space": "s", "entity": "e"},
            "empty",
        ),
        ("memory-forget", {"id_prefix": "ab"}, "at least 4 characters"),
    ],
)
def test_bad_memory_input_gets_a_clear_error(
    client, staff_user, purge_queues, settings, url, data, reason
):
    settings.ARTOO_WEB_MEMORY_TIMEOUT_S = 1
    client.force_login(staff_user)
    response = client.post(reverse(url), data)
    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not BusMessage.objects.filter(type="Megram").exists()


def append_event(run_id: str, anomaly: str, detail: str) -> AuditEventRecord:
    return AuditEventRecord.append(
        AuditEvent(
            event_id=detail,
            timestamp=timezone.now(),
            run_id=run_id,
            from_role="R3",
            to_role="R7",
            message_type="SubTask",
            anomaly=anomaly,
            detail=detail,
        )
    )


def test_audit_page_filters_anomalies_and_verifies_the_chain(client, staff_user, run):
    append_event(str(run.id), "none", "quiet")
    append_event(str(run.id), "drift", "drifting")
    client.force_login(staff_user)
    page = client.get(reverse("audit"), {"anomaly": "any"}).content.decode()
    assert "drifting" in page and "quiet" not in page
    assert "Chain verified: 2 events" in page
    assert "The whole chain was last walked at " in page
    everything = client.get(reverse("audit")).content.decode()
    assert "quiet" in everything


def test_audit_page_shows_where_the_chain_breaks(client, staff_user, run):
    first = append_event(str(run.id), "none", "one")
    append_event(str(run.id), "none", "two")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE artoo_web_auditeventrecord SET detail = %s WHERE id = %s",
            ["forged", first.id],
        )
    client.force_login(staff_user)
    page = client.get(reverse("audit")).content.decode()
    assert f"chain broken at audit event {first.id}" in page


def test_audit_page_is_staff_only(client, user):
    client.force_login(user)
    assert client.get(reverse("audit")).status_code == 403


def test_run_list_shows_directive_duration_cost_and_filters_by_status(client, user):
    done = Run.objects.create(
        owner=user, raw_input="a", status="done", directive="accept", task_id="ta"
    )
    Run.objects.create(owner=user, raw_input="b", status="failed", task_id="tb")
    client.force_login(user)
    page = client.get(reverse("run-list"), {"status": "done"}).content.decode()
    assert f'id="run-{done.id}"' in page and ">tb<" not in page
    assert "accept" in page and "$0.0000" in page


def test_admin_lists_approvals_and_shows_memory_through_the_worker(
    client, staff_user, purge_queues, settings
):
    settings.ARTOO_WEB_MEMORY_TIMEOUT_S = 1
    staff_user.is_superuser = True
    staff_user.save()
    client.force_login(staff_user)
    assert client.get("/admin/artoo_web/approval/").status_code == 200
    assert client.get("/admin/artoo_web/approval/add/").status_code == 403
    index = client.get("/admin/").content.decode()
    assert reverse("admin:memory") in index
    memory = client.get(reverse("admin:memory"))
    assert memory.status_code == 200
    assert "memory worker unavailable" in memory.content.decode()
