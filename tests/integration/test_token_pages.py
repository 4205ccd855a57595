"""The API token page: create (shown once), list, revoke; one's own tokens only."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from artoo_web import api_tokens
from artoo_web.models import ApiToken

pytestmark = pytest.mark.django_db

SECRET = re.compile(r"artoo_[0-9a-f]{64}")


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    return client


def create(client, name: str):
    return client.post(reverse("token-create"), {"name": name})


def secret_of(response) -> str:
    found = SECRET.findall(response.content.decode())
    assert len(set(found)) == 1, found
    return found[0]


def api_status(secret: str) -> int:
    headers = {"Authorization": f"Bearer {secret}"}
    return Client().get("/api/runs", headers=headers).status_code


def listing(client) -> str:
    response = client.get(reverse("token-list"))
    assert response.status_code == 200
    return response.content.decode()


def row_of(page: str, token: ApiToken) -> str:
    match = re.search(rf'<tr id="token-{token.id}">(.*?)</tr>', page, re.S)
    assert match, f"no row for token {token.id}"
    return match.group(1)


def test_the_page_is_in_the_navigation_and_needs_a_login(client, user):
    response = client.get(reverse("token-list"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))
    client.force_login(user)
    assert f'href="{reverse("token-list")}"' in client.get("/").content.decode()


def test_a_new_token_is_shown_once_and_only_its_hash_is_kept(alice, user):
    response = create(alice, "laptop CLI")

    assert response.status_code == 201
    assert "no-store" in response["Cache-Control"]
    secret = secret_of(response)
    assert 'id="copy-token"' in response.content.decode()
    row = ApiToken.objects.get(user=user)
    assert (row.name, row.digest) == ("laptop CLI", api_tokens.digest(secret))
    assert secret not in {row.prefix, row.name, row.digest}
    for _ in range(2):
        page = listing(alice)
        assert "laptop CLI" in page and f"artoo_{row.prefix}…" in page
        assert secret not in page and not SECRET.search(page)
    assert api_status(secret) == 200


def test_the_list_shows_name_prefix_created_and_last_used(alice, user):
    row, secret = api_tokens.create(user, "build server")
    cells = row_of(listing(alice), row)
    assert "build server" in cells
    assert f"artoo_{row.prefix}…" in cells
    assert f'datetime="{row.created_at.isoformat()}"' in cells
    assert re.search(r'class="token-last-used muted">never<', cells)

    assert api_status(secret) == 200

    row.refresh_from_db()
    assert row.last_used_at is not None
    cells = row_of(listing(alice), row)
    assert f'datetime="{row.last_used_at.isoformat()}"' in cells
    assert "never" not in cells


def test_last_use_is_written_at_most_once_a_minute(user):
    row, secret = api_tokens.create(user, "poller")
    assert api_status(secret) == 200
    row.refresh_from_db()
    first = row.last_used_at

    assert api_status(secret) == 200
    row.refresh_from_db()
    assert row.last_used_at == first

    earlier = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(id=row.id).update(last_used_at=earlier)
    assert api_status(secret) == 200
    row.refresh_from_db()
    assert row.last_used_at > first


def test_revoke_stops_the_token_at_once_and_drops_it_from_the_list(alice, user):
    row, secret = api_tokens.create(user, "old laptop")
    assert api_status(secret) == 200

    response = alice.post(reverse("token-revoke", args=[row.id]), follow=True)

    assert response.redirect_chain == [(reverse("token-list"), 302)]
    page = response.content.decode()
    assert f"Revoked the token old laptop (artoo_{row.prefix}…)" in page
    assert f'id="token-{row.id}"' not in page
    assert api_status(secret) == 401
    again = alice.post(reverse("token-revoke", args=[row.id]), follow=True)
    assert "was revoked already" in again.content.decode()


def test_revoke_is_a_post_with_csrf(user):
    row, secret = api_tokens.create(user, "guarded")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    url = reverse("token-revoke", args=[row.id])

    assert browser.get(url).status_code == 405
    assert browser.post(url).status_code == 403
    assert api_status(secret) == 200


def test_a_user_sees_and_revokes_only_their_own_tokens(alice, other_user):
    theirs, secret = api_tokens.create(other_user, "bob's robot")

    assert "bob&#x27;s robot" not in listing(alice)
    assert theirs.prefix not in listing(alice)
    response = alice.post(reverse("token-revoke", args=[theirs.id]))
    assert response.status_code == 404
    assert alice.post(reverse("token-revoke", args=[10**9])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert api_status(secret) == 200


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "the name is empty"),
        ("   ", "the name is empty"),
        ("x" * 81, "81 characters; the limit is 80"),
        ("x" * 100_000, "100,000 characters; the limit is 80"),
        ("a\x00b", "Null characters are not allowed"),
        ("tab\there", "control character"),
    ],
)
def test_a_bad_name_gets_a_clear_error_and_creates_nothing(alice, name, reason):
    response = create(alice, name)

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not SECRET.search(response.content.decode())
    assert not ApiToken.objects.exists()


def test_a_name_that_is_not_utf8_is_refused(alice):
    response = alice.post(
        reverse("token-create"),
        b"name=caf%E9",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert "not valid UTF-8" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_duplicate_name_is_refused_while_the_first_token_lives(alice, user):
    row, _ = api_tokens.create(user, "laptop")

    response = create(alice, " laptop ")

    assert response.status_code == 400
    assert "You already have a token named &#x27;laptop&#x27;" in (
        response.content.decode()
    )
    assert ApiToken.objects.count() == 1
    api_tokens.revoke_one(row)
    assert create(alice, "laptop").status_code == 201


def test_a_user_holds_at_most_the_cap_of_live_tokens(alice, user, other_user):
    for n in range(api_tokens.MAX_LIVE):
        api_tokens.create(user, f"token {n}")

    response = create(alice, "one more")

    assert response.status_code == 400
    assert f"You hold {api_tokens.MAX_LIVE} tokens" in response.content.decode()
    assert ApiToken.objects.filter(user=user).count() == api_tokens.MAX_LIVE
    assert api_tokens.issue(other_user, "one more")


def test_secrets_never_reach_the_logs(alice, caplog):
    caplog.set_level(logging.DEBUG)
    secret = secret_of(create(alice, "quiet"))
    row = ApiToken.objects.get()
    api_status(secret)
    Client().get("/api/runs", headers={"Authorization": f"Bearer {secret}x"})
    alice.post(reverse("token-revoke", args=[row.id]))
    api_status(secret)

    assert caplog.records
    assert secret not in caplog.text
    assert secret[len(api_tokens.PREFIX) :] not in caplog.text


def test_the_management_command_creates_and_revokes_as_before(alice, user):
    out, err = StringIO(), StringIO()
    call_command(
        "create_api_token", user.username, "--name", "from cli", stdout=out, stderr=err
    )
    secret = out.getvalue().strip()
    assert SECRET.fullmatch(secret)
    assert api_status(secret) == 200
    assert "from cli" in listing(alice)

    prefix = secret[len(api_tokens.PREFIX) :][:8]
    call_command("create_api_token", user.username, "--revoke", prefix, stdout=out)

    assert "Revoked 1 token(s)" in out.getvalue()
    assert api_status(secret) == 401
    assert "from cli" not in listing(alice)
