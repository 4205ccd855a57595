"""A refused submission in Chromium: the form says why and keeps the text."""

from __future__ import annotations

import os

import pytest

from tests.browser import test_dashboard_browser as dashboard
from tests.browser.test_dashboard_browser import CHROMIUM, CREATE_USERS

browser = dashboard.browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"{CHROMIUM} is absent: install Debian's chromium (make browser-deps)",
    ),
]

ROWS = "document.querySelectorAll('#run-rows tr[id^=run-]').length"


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


def type_task(page, text: str) -> None:
    field = page.locator("#id_raw_input")
    field.fill(text)
    field.press("Enter")


def test_a_submission_over_the_limit_shows_why_and_adds_no_row(browser, cluster):
    page = dashboard.logged_in(browser, cluster, "alice")
    try:
        page.goto("/")
        type_task(page, "echo first")
        page.wait_for_function(f"{ROWS} === 1")
        type_task(page, "echo second")
        alert = page.locator("#run-form [role=alert]")
        alert.wait_for()
        assert "Too many runs submitted in the last minute: 1 of 1" in (
            alert.text_content()
        )
        assert page.locator("#id_raw_input").input_value() == "echo second"
        assert page.evaluate(ROWS) == 1
        page.reload()
        assert page.evaluate(ROWS) == 1
    finally:
        page.context.close()
