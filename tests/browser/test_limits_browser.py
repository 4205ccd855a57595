"""A refused submission in Chromium: the form says why and keeps the text."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.browser import test_dashboard_browser as dashboard
from tests.browser.test_dashboard_browser import CREATE_USERS

browser = dashboard.browser

pytestmark = dashboard.BROWSER_MARKS


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The web process alone (runs stay queued), one run a minute per user."""
    from devtools.cluster import Cluster

    # An embedded Redis of its own: the queued starts reach no other test.
    env = {"REDIS_URL": "", "ARTOO_USER_RUNS_PER_MINUTE": "1"}
    with Cluster(
        tmp_path_factory.mktemp("limits-cluster"), processes=("web",), env=env
    ) as running:
        running.manage("shell", "-c", CREATE_USERS)
        yield running


def test_a_submission_over_the_limit_shows_why_and_creates_nothing(browser, cluster):
    page = dashboard.logged_in(browser, cluster, "alice")
    try:
        dashboard.submit(page, "echo first")
        page.goto("/")
        before = dashboard.listed_ids(page)
        assert len(before) == 1
        field = page.locator("#id_raw_input")
        field.fill("echo second")
        field.press("Enter")
        alert = page.locator("#run-form [role=alert]")
        alert.wait_for()
        assert "Too many runs submitted in the last minute: 1 of 1" in (
            alert.text_content()
        )
        assert urlparse(page.url).path == "/"
        assert field.input_value() == "echo second"
        page.reload()
        assert dashboard.listed_ids(page) == before
    finally:
        page.context.close()
