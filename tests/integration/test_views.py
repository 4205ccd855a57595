"""Login everywhere, own runs only, and the new-run form."""

from __future__ import annotations

import pytest
from django.urls import reverse

from artoo_web.models import Run

pytestmark = pytest.mark.django_db


def test_every_page_sends_anonymous_users_to_login(client, run):
    for url in (reverse("run-list"), reverse("run-detail", args=[run.id])):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_login_page_is_served(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="password"' in response.content


def test_user_submits_a_run_and_sees_it_listed(
    client, user, purge_queues, django_capture_on_commit_callbacks
):
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("run-create"), {"raw_input": "echo hello\n"})
    run = Run.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("run-detail", args=[run.id])
    assert (run.owner, run.status, run.raw_input) == (user, "queued", "echo hello")
    assert purge_queues.llen("pipeline") == 1
    listing = client.get(reverse("run-list"))
    assert f'id="run-{run.id}"'.encode() in listing.content


def test_htmx_submission_opens_the_new_runs_page(client, user):
    client.force_login(user)
    response = client.post(
        reverse("run-create"), {"raw_input": "ls"}, headers={"HX-Request": "true"}
    )
    run = Run.objects.get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("run-detail", args=[run.id])


def test_a_refused_htmx_submission_stays_on_the_form_and_creates_nothing(client, user):
    client.force_login(user)
    response = client.post(
        reverse("run-create"), {"raw_input": "  "}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 400
    assert "HX-Redirect" not in response
    assert b'id="run-form"' in response.content and b"empty" in response.content
    assert not Run.objects.exists()


def test_the_list_page_names_its_live_stream(client, user, run):
    client.force_login(user)
    html = client.get(reverse("run-list")).content.decode()
    assert 'data-ws-path="/ws/run-list/"' in html
    assert f'<tr id="run-{run.id}" data-status="queued"' in html


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", b"empty"),
        ("   \n\t ", b"empty"),
        ("x" * 20_001, b"limit"),
        ("echo \x00", b"Null characters are not allowed"),
    ],
)
def test_bad_input_gets_a_clear_error_and_creates_nothing(client, user, text, reason):
    client.force_login(user)
    response = client.post(reverse("run-create"), {"raw_input": text})
    assert response.status_code == 400
    assert reason in response.content
    assert not Run.objects.exists()


def test_task_text_is_rendered_escaped(client, user):
    client.force_login(user)
    client.post(reverse("run-create"), {"raw_input": "<script>alert(1)</script>"})
    page = client.get(reverse("run-detail", args=[Run.objects.get().id]))
    assert b"<script>alert(1)</script>" not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content


def test_a_prompt_says_whether_law_1_or_memory_asks(client, run, user):
    from artoo_web.models import Approval

    Approval.objects.create(
        run=run, subtask_id="s1", tool="shell", command="rm x", reason="rm"
    )
    Approval.objects.create(
        run=run,
        subtask_id="s2",
        tool="shell",
        command="wc -l a.txt",
        reason="memory Caution for tool:shell / target:wc -l a.txt",
        gate="memory",
    )
    client.force_login(user)
    page = client.get(reverse("run-detail", args=[run.id])).content.decode()
    assert "Approval needed: <code>shell</code> in s1" in page
    assert "Memory's caution: <code>shell</code> in s2" in page


def test_another_users_run_is_not_found(client, run, other_user):
    client.force_login(other_user)
    assert client.get(reverse("run-detail", args=[run.id])).status_code == 404
    assert f'id="run-{run.id}"'.encode() not in client.get(reverse("run-list")).content


def test_staff_sees_every_run(client, run, staff_user):
    client.force_login(staff_user)
    assert client.get(reverse("run-detail", args=[run.id])).status_code == 200


def test_run_creation_requires_csrf(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(reverse("run-create"), {"raw_input": "ls"})
    assert response.status_code == 403
    assert not Run.objects.exists()


def test_admin_is_staff_only(client, user):
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 302
