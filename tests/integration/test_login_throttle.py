"""Login throttling: wrong passwords lock a user, never for everyone.

Both login pages go through artoo_web/logins with the project's settings. From
an unknown browser, ARTOO_LOGIN_FAILURE_LIMIT (5) failures lock the user out
from that address, right password too, with a page that says so, and an
address failing across many usernames is cooled off; a browser that logged in
as the user before (its device cookie) is counted on its own, so nobody else's
failures, from the same address included, lock it out. Other users and the
API's tokens are not affected, and a lock lifts after the cool-off.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.core import signing
from django.core.management import call_command
from django.db.models import F
from django.test import Client

from artoo_web import api_tokens
from artoo_web.logins.models import LoginCounter

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
    for _ in range(4):
        log_in(client, "alice", WRONG)
    assert log_in(client, "alice", "alice-pass-123").status_code == 302
    client.logout()
    assert fail_six_times(client, "alice")[:4] == [200, 200, 200, 200]
    # The cool-off passes: move the recorded attempts back by its length.
    cooloff = timedelta(seconds=settings.ARTOO_LOGIN_COOLOFF_S)
    LoginCounter.objects.update(last_failure=F("last_failure") - cooloff)
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


# Device cookies: a browser that logged in before is counted on its own.

DEVICE = "artoo_device"
ADDRESS_LOCKED = "Too many failed log-ins from your address, across users"


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser(
        "admin", password="admin-pass-123"
    )


def known_browser(username, password, path="/login/"):
    """Return a client that has logged in as ``username`` and logged out again,
    as through the pages: it keeps the device cookie, not the session."""
    browser = Client()
    assert log_in(browser, username, password, path).status_code == 302
    assert browser.post("/logout/").status_code == 302
    assert "_auth_user_id" not in browser.session
    assert browser.cookies[DEVICE].value
    return browser


def test_failures_from_the_admins_own_address_do_not_lock_out_the_admins_browser(
    admin_user,
):
    admins_browser = known_browser("admin", "admin-pass-123", "/admin/login/")
    attacker = Client()
    statuses = [
        log_in(attacker, "admin", WRONG, "/admin/login/").status_code for _ in range(6)
    ]
    assert statuses == [200, 200, 200, 200, 429, 429]
    # From that address an unknown browser is locked, right password too...
    assert log_in(attacker, "admin", "admin-pass-123").status_code == 429
    assert log_in(Client(), "admin", "admin-pass-123").status_code == 429
    # ...but the admin's browser, same address, logs in on both pages.
    assert log_in(admins_browser, "admin", "admin-pass-123").status_code == 302
    admins_browser.post("/logout/")
    admitted = log_in(admins_browser, "admin", "admin-pass-123", "/admin/login/")
    assert admitted.status_code == 302
    assert admins_browser.get("/admin/").status_code == 200
    counters = admins_browser.get("/admin/logins/logincounter/")
    assert counters.status_code == 200
    assert "5 failures (user from an address: admin)" in counters.content.decode()


def test_a_device_cookie_shields_only_its_own_user_and_only_when_genuine(
    user, other_user
):
    browser = known_browser("bob", "bob-pass-123")
    # Bob's cookie does not make alice's attempts from this browser "known".
    assert fail_six_times(browser, "alice")[-1] == 429
    assert log_in(browser, "alice", "alice-pass-123").status_code == 429
    # A cookie altered by its holder is no device cookie at all.
    payload, stamp, signature = browser.cookies[DEVICE].value.split(":")
    claims = json.loads(signing.b64_decode(payload.encode()))
    assert claims["u"] == "bob"
    claims["u"] = "alice"
    forged = signing.b64_encode(json.dumps(claims).encode()).decode()
    browser.cookies[DEVICE] = f"{forged}:{stamp}:{signature}"
    assert log_in(browser, "alice", "alice-pass-123").status_code == 429


def test_failures_on_a_known_browser_lock_that_browser_alone(user):
    browser = known_browser("alice", "alice-pass-123")
    assert fail_six_times(browser, "alice") == [200, 200, 200, 200, 429, 429]
    refused = log_in(browser, "alice", "alice-pass-123")
    assert refused.status_code == 429
    assert "as <strong>alice</strong> from this browser" in refused.content.decode()
    # Another browser at the same address was not counted against.
    assert log_in(Client(), "alice", "alice-pass-123").status_code == 302


def test_a_spray_across_usernames_cools_the_address_off_for_unknown_browsers(
    user, other_user, settings
):
    alices_browser = known_browser("alice", "alice-pass-123")
    attacker = Client()
    limit = settings.ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT
    assert limit == 20
    sprayed = [log_in(attacker, f"user{n}", WRONG) for n in range(limit - 1)]
    assert {r.status_code for r in sprayed} == {200}
    # Logging in to an account of one's own does not reset the address's count.
    assert log_in(attacker, "bob", "bob-pass-123").status_code == 302
    attacker.post("/logout/")
    last = log_in(Client(), "user-last", WRONG)
    assert last.status_code == 429
    assert ADDRESS_LOCKED in last.content.decode()
    assert "locked for 5 minutes" in last.content.decode()
    assert 0 < int(last["Retry-After"]) <= settings.ARTOO_LOGIN_ADDRESS_COOLOFF_S
    # Every unknown browser there is cooled off, a right password too...
    refused = log_in(Client(), "bob", "bob-pass-123")
    assert refused.status_code == 429
    assert ADDRESS_LOCKED in refused.content.decode()
    # ...but not a known browser, nor another address.
    assert log_in(alices_browser, "alice", "alice-pass-123").status_code == 302
    elsewhere = log_in(Client(), "bob", "bob-pass-123", address="10.0.0.9")
    assert elsewhere.status_code == 302
    # The cool-off passes: move the recorded failures back by its length.
    cooloff = timedelta(seconds=settings.ARTOO_LOGIN_ADDRESS_COOLOFF_S)
    LoginCounter.objects.update(last_failure=F("last_failure") - cooloff)
    assert log_in(Client(), "bob", "bob-pass-123").status_code == 302


def test_the_device_cookie_is_signed_httponly_lax_and_secure_over_https(user):
    browser = Client()
    log_in(browser, "alice", "alice-pass-123")
    cookie = browser.cookies[DEVICE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert not cookie["secure"]
    assert int(cookie["max-age"]) == settings.ARTOO_LOGIN_DEVICE_DAYS * 24 * 3600
    over_https = Client()
    response = over_https.post(
        "/login/", {"username": "alice", "password": "alice-pass-123"}, secure=True
    )
    assert response.status_code == 302
    assert over_https.cookies[DEVICE]["secure"]
    # A new log-in gives a new cookie: the nonce is not reused.
    assert over_https.cookies[DEVICE].value != cookie.value


def test_a_failed_login_sets_no_device_cookie(user):
    browser = Client()
    log_in(browser, "alice", WRONG)
    assert DEVICE not in browser.cookies


def test_staff_lift_a_users_locks_with_unlock_login(client, user):
    fail_six_times(client, "alice")
    assert log_in(client, "alice", "alice-pass-123").status_code == 429
    out = io.StringIO()
    call_command("unlock_login", "alice", stdout=out)
    assert "alice: 1 failed log-in counter(s) cleared" in out.getvalue()
    assert log_in(client, "alice", "alice-pass-123").status_code == 302


def test_with_the_throttle_off_nothing_is_counted_or_locked(client, user, settings):
    settings.ARTOO_LOGIN_THROTTLE = False
    assert fail_six_times(client, "alice") == [200] * 6
    assert log_in(client, "alice", "alice-pass-123").status_code == 302
    assert not LoginCounter.objects.exists()
    assert DEVICE not in client.cookies
