"""The JSON API: tokens, clear errors, and nobody else's runs."""

from __future__ import annotations

import uuid

import pytest

from artoo_web import api_tokens, bus
from artoo_web.models import Approval, Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def auth(user):
    _, secret = api_tokens.create(user)
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def other_auth(other_user):
    _, secret = api_tokens.create(other_user)
    return {"Authorization": f"Bearer {secret}"}


def post(client, url, data, headers, content_type="application/json"):
    return client.post(url, data=data, content_type=content_type, headers=headers)


def test_create_run_returns_201_with_its_id(client, auth, user):
    response = post(client, "/api/runs", '{"input": "echo hi"}', auth)
    assert response.status_code == 201
    run = Run.objects.get(id=response.json()["id"])
    assert (run.owner, run.raw_input, run.status) == (user, "echo hi", "queued")


def test_missing_or_bad_token_is_401(client):
    assert client.get("/api/runs").status_code == 401
    response = client.get("/api/runs", headers={"Authorization": "Bearer artoo_nope"})
    assert response.status_code == 401
    assert "token" in response.json()["error"]


def test_revoked_token_stops_working(client, user):
    row, secret = api_tokens.create(user)
    headers = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/runs", headers=headers).status_code == 200
    assert api_tokens.revoke(row.prefix, user=user) == 1
    assert client.get("/api/runs", headers=headers).status_code == 401


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"\xff\xfe not utf-8", "UTF-8"),
        (b"{not json", "JSON"),
        (b"[1, 2]", "object"),
        (b'{"input": ""}', "empty"),
        (b'{"input": "   \\n "}', "empty"),
        (b'{"input": 42}', "string"),
        (b'{"input": "echo \\u0000"}', "NUL"),
    ],
)
def test_bad_bodies_get_clear_errors_and_create_nothing(client, auth, body, needle):
    response = post(client, "/api/runs", body, auth)
    assert response.status_code == 400
    assert needle in response.json()["error"]
    assert not Run.objects.exists()


def test_huge_input_is_refused(client, auth):
    response = post(client, "/api/runs", '{"input": "%s"}' % ("x" * 1_000_000), auth)
    assert response.status_code == 400
    assert not Run.objects.exists()


def test_other_users_runs_are_404(client, run, other_auth):
    for url in (f"/api/runs/{run.id}", f"/api/runs/{run.id}/messages"):
        assert client.get(url, headers=other_auth).status_code == 404
    assert (
        post(client, f"/api/runs/{run.id}/cancel", "{}", other_auth).status_code == 404
    )
    assert Run.objects.get(id=run.id).status == "queued"


def test_forged_run_id_is_404(client, auth):
    assert client.get(f"/api/runs/{uuid.uuid4()}", headers=auth).status_code == 404


def test_messages_after_an_id(client, run, auth):
    ids = [bus.send(run, "User", "R6", "AuditQuery", {}).id for _ in range(3)]
    response = client.get(f"/api/runs/{run.id}/messages?after={ids[0]}", headers=auth)
    assert [m["id"] for m in response.json()["messages"]] == ids[1:]
    bad = client.get(f"/api/runs/{run.id}/messages?after=x", headers=auth)
    assert bad.status_code == 400


def test_approval_of_another_run_is_404_and_changes_nothing(client, user, auth):
    mine = Run.objects.create(owner=user, raw_input="a")
    theirs = Run.objects.create(owner=user, raw_input="b")
    approval = Approval.objects.create(
        run=theirs, subtask_id="s", tool="shell", command="rm x", reason="rm"
    )
    url = f"/api/runs/{mine.id}/approvals/{approval.id}"
    response = post(client, url, '{"decision": "approve"}', auth)
    assert response.status_code == 404
    assert Approval.objects.get(id=approval.id).status == "pending"


def test_a_pending_approval_says_which_gate_asks(client, run, auth):
    law1 = Approval.objects.create(
        run=run, subtask_id="s", tool="shell", command="rm x", reason="rm"
    )
    memory = Approval.objects.create(
        run=run,
        subtask_id="s",
        tool="shell",
        command="wc -l a.txt",
        reason="memory Caution for tool:shell / target:wc -l a.txt",
        gate="memory",
    )
    pending = client.get(f"/api/runs/{run.id}", headers=auth).json()
    gates = {a["id"]: a["gate"] for a in pending["pending_approvals"]}
    assert gates == {str(law1.id): "law1", str(memory.id): "memory"}


def test_decision_must_be_approve_or_deny(client, run, auth):
    approval = Approval.objects.create(
        run=run, subtask_id="s", tool="shell", command="rm x", reason="rm"
    )
    url = f"/api/runs/{run.id}/approvals/{approval.id}"
    assert post(client, url, '{"decision": "yes"}', auth).status_code == 400
    assert post(client, url, '{"decision": "deny"}', auth).status_code == 200
    replay = post(client, url, '{"decision": "approve"}', auth)
    assert replay.status_code == 409
    assert Approval.objects.get(id=approval.id).status == "denied"


def test_answer_requires_a_waiting_run(client, run, auth):
    response = post(client, f"/api/runs/{run.id}/answer", '{"answer": "x"}', auth)
    assert response.status_code == 409


def test_cancel_ends_the_run_once(client, run, auth):
    response = post(client, f"/api/runs/{run.id}/cancel", "{}", auth)
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert post(client, f"/api/runs/{run.id}/cancel", "{}", auth).status_code == 409
