"""Login throttling: wrong passwords in a row lock one user from one address.

Both login pages go through django-axes with the project's settings: after
ARTOO_LOGIN_FAILURE_LIMIT (5) failures the user is refused from that address,
right password too, with a page that says so; other users and the API's
tokens are not affected, and the lock lifts after the cool-off.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db.models import F

from artoo_web import api_tokens

pytestmark = pytest.mark.django_db

WRONG = "not-the-password"
LOCKED = "Too many failed log-ins as <strong>{}</strong>"


def log_in(client, username, password, path="/login/", address="127.0.0.1"):
    data = {"username": username, "password": password}
    return client.post(path, data, REMOTE_ADDR=address)


def fail_six_times(client, username, path="/login/"):
    """Send six wrong passwords in a row; return the statuses."""
    return [log_in(client, username, WRONG, path).status_code for _ in range(6)]


def test_six_wrong_passwords_lock_the_user_even_with_the_right_one(client, user):
    assert fail_six_times(client, "alice") == [200, 200, 200, 200, 429, 429]
    refused = log_in(client, "alice", "alice-pass-123")
    assert refused.status_code == 429
    page = refused.content.decode()
    assert LOCKED.format("alice") in page
    assert "locked for 15 minutes, even with the right password" in page
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


def test_another_user_and_another_address_still_log_in(client, user, other_user):
    fail_six_times(client, "alice")
    assert log_in(client, "alice", "alice-pass-123").status_code == 429
    assert log_in(client, "bob", "bob-pass-123").status_code == 302
    client.logout()
    elsewhere = log_in(client, "alice", "alice-pass-123", address="10.0.0.9")
    assert elsewhere.status_code == 302


def test_the_admin_login_is_locked_as_well(client, staff_user):
    statuses = fail_six_times(client, "carol", "/admin/login/")
    assert statuses[-1] == 429
    refused = log_in(client, "carol", "carol-pass-123", "/admin/login/")
    assert refused.status_code == 429
    assert LOCKED.format("carol") in refused.content.decode()
    # One lock for both pages: the site's login refuses carol too.
    assert log_in(client, "carol", "carol-pass-123").status_code == 429


def test_a_locked_users_api_token_still_works(client, user):
    _, secret = api_tokens.create(user)
    fail_six_times(client, "alice")
    response = client.get("/api/runs", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200


def test_a_success_clears_the_failures_and_the_lock_lifts_after_the_cooloff(
    client, user
):
    from axes.models import AccessAttempt

    for _ in range(4):
        log_in(client, "alice", WRONG)
    assert log_in(client, "alice", "alice-pass-123").status_code == 302
    client.logout()
    assert fail_six_times(client, "alice")[:4] == [200, 200, 200, 200]
    # The cool-off passes: move the recorded attempts back by its length.
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(1)
    )
    assert log_in(client, "alice", "alice-pass-123").status_code == 302


@pytest.mark.django_db(transaction=True)
async def test_daphnes_asgi_path_serves_the_same_lockout_page(async_client, user):
    data = {"username": "alice", "password": WRONG}
    statuses = [
        (await async_client.post("/login/", data)).status_code for _ in range(6)
    ]
    assert statuses[-1] == 429
    data["password"] = "alice-pass-123"
    refused = await async_client.post("/login/", data)
    assert refused.status_code == 429
    assert LOCKED.format("alice") in refused.content.decode()
