"""The pages under their Content-Security-Policy in Chromium: nothing is refused."""

from __future__ import annotations

from tests.browser import test_dashboard_browser as dashboard
from tests.browser.test_dashboard_browser import RUN_PAGE, USERS, WAIT_MS

# The dashboard tests' fixtures: Chromium, and a cluster of this module's own.
browser = dashboard.browser
cluster = dashboard.cluster

pytestmark = dashboard.BROWSER_MARKS

ROOT_PASSWORD = "root-pass-123"


def watched(page) -> list[str]:
    """Collect the console's CSP refusals of ``page`` as they happen."""
    refusals: list[str] = []
    page.on(
        "console",
        lambda msg: (
            refusals.append(msg.text) if "Content Security Policy" in msg.text else None
        ),
    )
    return refusals


def logged_in(browser, cluster, username: str, password: str):
    """Log in a page that keeps the CSP (Playwright's string waits eval: none here)."""
    context = browser.new_context(base_url=cluster.url)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    refusals = watched(page)
    visit(page, "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{cluster.url}/")
    return page, refusals


def visit(page, path: str) -> None:
    response = page.goto(path)
    assert response.status == 200, path
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe" not in policy


def test_a_user_submits_and_follows_a_run_with_nothing_refused(browser, cluster):
    page, refusals = logged_in(browser, cluster, "alice", USERS["alice"])
    try:
        visit(page, "/")
        page.locator("#list-conn", has_text="live").wait_for()
        page.locator("#id_raw_input").fill("echo csp")
        page.locator("#id_raw_input").press("Enter")
        page.wait_for_url(RUN_PAGE)
        page.locator("#conn-state", has_text="live").wait_for()
        page.locator("#run-status", has_text="Done").wait_for()
        visit(page, "/")
        row = page.locator("#run-rows tr[id^=run-]", has_text="echo csp").first
        row.locator(".status", has_text="Done").wait_for()
        visit(page, "/memory/")
        assert refusals == []
    finally:
        page.context.close()


def test_the_operator_pages_and_the_admin_run_with_nothing_refused(browser, cluster):
    code = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser('root', password={ROOT_PASSWORD!r})"
    )
    cluster.manage("shell", "-c", code)
    page, refusals = logged_in(browser, cluster, "root", ROOT_PASSWORD)
    try:
        for path in ("/audit/", "/admin/", "/admin/memory/", "/admin/artoo_web/run/"):
            visit(page, path)
        assert refusals == []
    finally:
        page.context.close()
