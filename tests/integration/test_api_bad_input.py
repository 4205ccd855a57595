"""Every API error is JSON with its status; no input a client sends is a 500."""

from __future__ import annotations

import pytest

from artoo_web import api_tokens
from artoo_web.models import BusMessage, Run, RunStatus

pytestmark = pytest.mark.django_db

THREE_MB = b'{"input": "' + b"x" * 3_000_000 + b'"}'
DEEP = b'{"input": "echo hi", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
HUGE_NUMBER = b'{"input": "echo hi", "n": ' + b"9" * 5_000 + b"}"


@pytest.fixture
def auth(user):
    _, secret = api_tokens.create(user)
    return {"Authorization": f"Bearer {secret}"}


def post(client, url, data: bytes, headers):
    return client.post(url, data=data, content_type="application/json", headers=headers)


def json_error(response, status: int) -> str:
    """Return the error message of a JSON error reply with ``status``."""
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    message = response.json()["error"]
    assert message
    return message


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b'{"input": "echo \\ud800"}', "surrogate"),
        (b'{"input": "echo \\udfff tail"}', "surrogate"),
        (HUGE_NUMBER, "digits"),
        (b'{"input": ' + b"1" * 5_000 + b"}", "digits"),
        (DEEP, "nested"),
        (b"[" * 100_000, "nested"),
        (b'{"input": "echo hi", "n": NaN}', "NaN"),
    ],
    ids=[
        "lone-surrogate",
        "low-surrogate",
        "5000-digit-field",
        "5000-digit-input",
        "100000-nested-arrays",
        "100000-unclosed-arrays",
        "nan",
    ],
)
def test_bodies_python_cannot_hold_or_store_are_400_with_a_message(
    client, auth, body, needle
):
    response = post(client, "/api/runs", body, auth)

    assert needle in json_error(response, 400)
    assert not Run.objects.exists()


def test_a_three_megabyte_body_is_413_with_a_message(client, auth):
    response = post(client, "/api/runs", THREE_MB, auth)

    assert "limit" in json_error(response, 413)
    assert not Run.objects.exists()


def test_a_lone_surrogate_in_an_answer_is_400_and_nothing_is_sent(client, run, auth):
    Run.objects.filter(id=run.id).update(status=RunStatus.NEEDS_INPUT)

    response = post(
        client, f"/api/runs/{run.id}/answer", b'{"answer": "\\ud800"}', auth
    )

    assert "surrogate" in json_error(response, 400)
    assert not BusMessage.objects.filter(run=run).exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs/NOT-A-UUID",
        "/api/runs/not-a-uuid/messages",
        "/api/runs/1234",
        "/api/runs/%00",
        "/api/nothing-here",
    ],
)
def test_a_malformed_run_id_or_path_is_a_json_404(client, auth, path):
    assert "not found" in json_error(client.get(path, headers=auth), 404).lower()


def test_an_upper_case_run_id_names_the_same_run(client, run, auth):
    upper = str(run.id).upper()

    detail = client.get(f"/api/runs/{upper}", headers=auth)
    listed = client.get(f"/api/runs/{upper}/messages", headers=auth)

    assert detail.status_code == 200
    assert detail.json()["id"] == str(run.id)
    assert listed.status_code == 200


def test_a_wrong_method_is_a_json_405_naming_the_allowed_ones(client, run, auth):
    response = client.delete(f"/api/runs/{run.id}", headers=auth)

    assert "GET" in json_error(response, 405)
    assert response["Allow"] == "GET"


def test_an_unauthenticated_probe_of_a_malformed_path_is_json_too(client):
    assert json_error(client.get("/api/runs/NOT-A-UUID"), 404)
