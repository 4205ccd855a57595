"""A user creates an API token in Chromium, copies it, uses it and revokes it."""

from __future__ import annotations

import re

import pytest

from tests.browser import test_dashboard_browser as dashboard
from tests.browser.test_csp_browser import watched
from tests.browser.test_dashboard_browser import (
    ARTIFACTS,
    CREATE_USERS,
    USERS,
    WAIT_MS,
)

# Chromium as the dashboard tests start it.
browser = dashboard.browser

pytestmark = dashboard.BROWSER_MARKS

SECRET = re.compile(r"artoo_[0-9a-f]{64}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Only the web process: the token page and the API need nothing else."""
    from django.conf import settings

    from devtools.cluster import Cluster

    with Cluster(
        tmp_path_factory.mktemp("tokens-cluster"),
        processes=("web",),
        env={"REDIS_URL": settings.REDIS_URL},
    ) as running:
        running.manage("shell", "-c", CREATE_USERS)
        yield running


@pytest.fixture
def alice(browser, cluster):
    """Alice logged in, under the pages' CSP, allowed to use the clipboard."""
    context = browser.new_context(
        base_url=cluster.url, permissions=["clipboard-read", "clipboard-write"]
    )
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.refusals = watched(page)
    page.goto("/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", USERS["alice"])
    page.click("button[type=submit]")
    page.wait_for_url(f"{cluster.url}/")
    yield page
    context.close()


def api_status(page, secret: str) -> int:
    headers = {"Authorization": f"Bearer {secret}"}
    return page.request.get("/api/runs", headers=headers).status


def test_a_user_creates_copies_uses_and_revokes_a_token(alice, cluster):
    alice.get_by_role("link", name="API tokens").click()
    alice.wait_for_url(f"{cluster.url}/tokens/")
    alice.fill("#id_name", "browser test")
    alice.get_by_role("button", name="Create token").click()

    field = alice.locator("#token-secret")
    field.wait_for()
    secret = field.input_value()
    assert SECRET.fullmatch(secret)
    alice.locator("#copy-token").click()
    alice.locator("#copy-state", has_text="Copied to the clipboard.").wait_for()
    assert alice.evaluate("navigator.clipboard.readText()") == secret
    ARTIFACTS.mkdir(exist_ok=True)
    alice.screenshot(path=str(ARTIFACTS / "token-created.png"), full_page=True)
    assert api_status(alice, secret) == 200

    alice.get_by_role("link", name="Back to your tokens").click()
    row = alice.locator("#token-rows tr", has_text="browser test")
    assert row.locator(".token-prefix").inner_text() == f"{secret[:14]}…"
    assert row.locator(".token-last-used").get_attribute("datetime")
    assert secret not in alice.content()
    alice.screenshot(path=str(ARTIFACTS / "tokens.png"), full_page=True)

    row.get_by_role("button", name="Revoke").click()
    alice.locator(".flash", has_text="Revoked the token browser test").wait_for()
    assert alice.locator("#token-rows tr", has_text="browser test").count() == 0
    assert api_status(alice, secret) == 401
    assert alice.refusals == []
    assert secret not in cluster.log_text("web", whole=True)
