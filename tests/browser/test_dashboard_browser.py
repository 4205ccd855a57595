"""The operator's UI in Debian's Chromium against a real cluster of processes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from devtools.apiclient import seed_shared

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USERS = {"alice": "alice-pass-123", "bob": "bob-pass-123"}
WAIT_MS = 30_000

# Every browser test module takes these marks.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"{CHROMIUM} is absent: install Debian's chromium (make browser-deps)",
    ),
]
pytestmark = BROWSER_MARKS

CREATE_USERS = "; ".join(
    [
        "from django.contrib.auth.models import User",
        *(f"User.objects.create_user({n!r}, password={p!r})" for n, p in USERS.items()),
    ]
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from django.conf import settings

    from devtools.cluster import Cluster

    env = {
        "REDIS_URL": settings.REDIS_URL,
        "ARTOO_OFFLINE_LATENCY_MS": "250",
        "ARTOO_USER_SHARED": "1",  # where a test puts a file that was there before
    }
    with Cluster(
        tmp_path_factory.mktemp("browser-cluster"),
        processes=("web", "pipeline", "memory", "auditor"),
        env=env,
    ) as running:
        running.manage("shell", "-c", CREATE_USERS)
        running.token = running.manage("create_api_token", "alice").stdout.strip()
        yield running


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def logged_in(browser, cluster, username: str, width: int = 1280):
    # Playwright evaluates string waits with eval, which the pages' CSP refuses;
    # test_csp_browser.py drives the pages under their CSP.
    context = browser.new_context(
        base_url=cluster.url, viewport={"width": width, "height": 900}, bypass_csp=True
    )
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", USERS[username])
    page.click("button[type=submit]")
    page.wait_for_url(f"{cluster.url}/")
    return page


@pytest.fixture
def alice(browser, cluster):
    page = logged_in(browser, cluster, "alice")
    yield page
    page.context.close()


RUN_PAGE = re.compile(r"/runs/[0-9a-f-]{36}/$")


def submit(page, task: str) -> str:
    """Submit a task from the run list (Enter submits); return its dashboard path.

    Submitting opens the new run's page.
    """
    page.goto("/")
    field = page.locator("#id_raw_input")
    lines = task.split("\n")
    field.fill(lines[0])
    for line in lines[1:]:
        field.press("Shift+Enter")
        field.press_sequentially(line)
    field.press("Enter")
    page.wait_for_url(RUN_PAGE)
    return urlparse(page.url).path


def wait_live(page) -> None:
    page.wait_for_function("window.artooLive && artooLive.state() === 'live'")


def wait_status(page, label: str) -> None:
    page.wait_for_function(
        "(label) => document.getElementById('run-status').textContent.trim() === label",
        arg=label,
    )


def wait_final(page) -> None:
    """Wait for the FinalResult row: every earlier row is in by then."""
    page.locator("#bus-timeline .type", has_text="FinalResult").wait_for()


def rendered_ids(page) -> list[int]:
    return page.eval_on_selector_all(
        "#bus-timeline > li", "items => items.map(li => Number(li.dataset.id))"
    )


def stored_ids(page, cluster, path: str) -> list[int]:
    run_id = path.strip("/").split("/")[-1]
    response = page.request.get(
        f"/api/runs/{run_id}/messages",
        headers={"Authorization": f"Bearer {cluster.token}"},
    )
    assert response.ok, response.text()
    return [m["id"] for m in response.json()["messages"]]


def api_submit(page, cluster, task: str) -> str:
    """Submit a task through the API (as from a second terminal); return its id."""
    response = page.request.post(
        "/api/runs",
        data=json.dumps({"input": task}),
        headers={
            "Authorization": f"Bearer {cluster.token}",
            "Content-Type": "application/json",
        },
    )
    assert response.status == 201, response.text()
    return response.json()["id"]


def listed_ids(page) -> list[str]:
    return page.eval_on_selector_all(
        "#run-rows tr[id^=run-]", "rows => rows.map(tr => tr.id)"
    )


@pytest.mark.parametrize("how", ["Enter", "button"])
def test_submitting_opens_the_new_runs_live_page(alice, how):
    alice.goto("/")
    field = alice.locator("#id_raw_input")
    field.fill(f"echo submitted by {how}")
    if how == "Enter":
        field.press("Enter")
    else:
        alice.get_by_role("button", name="Run", exact=True).click()

    alice.wait_for_url(RUN_PAGE)
    wait_live(alice)
    assert alice.locator("pre.input").text_content() == f"echo submitted by {how}"
    wait_status(alice, "Done")
    alice.locator("#final-result .headline", has_text="done").wait_for()


def test_a_refused_task_stays_on_the_list_with_its_message(alice):
    alice.goto("/")
    before = listed_ids(alice)
    alice.locator("#id_raw_input").press("Enter")

    alice.locator("#run-form .error", has_text="empty").wait_for()
    assert urlparse(alice.url).path == "/"
    alice.reload()
    assert listed_ids(alice) == before


def test_the_run_list_follows_a_run_to_its_end_without_reloading(alice, cluster):
    alice.goto("/")
    alice.wait_for_function("window.artooRuns && artooRuns.state() === 'live'")
    alice.evaluate("window.sameDocument = true")

    run_id = api_submit(alice, cluster, "echo listed live")

    row = alice.locator(f"#run-{run_id}")
    row.wait_for()
    assert listed_ids(alice)[0] == f"run-{run_id}"
    row.locator(".status", has_text="Done").wait_for()
    assert row.locator(".directive").inner_text() == "accept"
    assert row.locator(".run-duration").get_attribute("data-end")
    assert alice.evaluate("window.sameDocument === true")


def test_a_run_fills_the_dashboard_live_to_its_result(alice, cluster):
    path = submit(alice, "echo hello # expect: hel+o")
    alice.goto(path)
    wait_live(alice)
    alice.locator("#ggs-timeline code", has_text="init→accept").wait_for()
    wait_status(alice, "Done")
    wait_final(alice)
    assert alice.locator("#loss-chart svg circle").count() >= 3
    assert alice.locator("#lanes .verdict-pass").count() >= 1
    assert alice.locator("#final-result .exit-code").inner_text() == "0"
    assert "hello" in alice.locator("#final-result pre.output").inner_text()
    assert rendered_ids(alice) == stored_ids(alice, cluster, path)
    ARTIFACTS.mkdir(exist_ok=True)
    alice.screenshot(path=str(ARTIFACTS / "dashboard-1280.png"), full_page=True)
    alice.set_viewport_size({"width": 390, "height": 844})
    alice.screenshot(path=str(ARTIFACTS / "dashboard-390.png"), full_page=True)
    width = alice.evaluate("document.documentElement.scrollWidth")
    assert width <= 390


def test_operator_approves_a_law_one_prompt(alice, cluster):
    kept = seed_shared(cluster, "alice", "a.txt")
    alice.goto(submit(alice, f"cat {kept}\nrm {kept}"))
    wait_live(alice)
    prompt = alice.locator("#prompts .approval")
    prompt.wait_for()
    assert prompt.locator("pre.command").inner_text() == f"rm {kept}"
    prompt.get_by_role("button", name="Approve").click()
    alice.locator("#prompts .decided", has_text="Approved").wait_for()
    wait_status(alice, "Done")


def test_cancel_stops_a_long_run(alice):
    alice.goto(submit(alice, "sleep 60"))
    wait_live(alice)
    wait_status(alice, "Running")
    alice.get_by_role("button", name="Cancel run").click()
    wait_status(alice, "Cancelled")
    alice.locator("#final-result", has_text="You cancelled the run").wait_for()
    assert alice.locator("#cancel-run").count() == 0


def test_the_stream_reconnects_after_the_web_process_dies_and_misses_nothing(
    alice, cluster
):
    path = submit(alice, "echo one\necho two\necho three\necho four")
    alice.goto(path)
    wait_live(alice)
    cluster.kill("web")
    alice.wait_for_function("artooLive.state() === 'reconnecting'")
    cluster.start_process("web")
    wait_live(alice)
    wait_status(alice, "Done")
    wait_final(alice)
    assert rendered_ids(alice) == stored_ids(alice, cluster, path)
    alice.evaluate("artooLive.close()")
    alice.wait_for_function("artooLive.state() === 'reconnecting'")
    wait_live(alice)


def test_another_user_cannot_open_the_run_page_or_its_stream(alice, browser, cluster):
    path = submit(alice, "echo private")
    bob = logged_in(browser, cluster, "bob", width=390)
    try:
        response = bob.goto(path)
        assert response.status == 404
        assert bob.locator("h1").inner_text() == "Not found"
        outcome = bob.evaluate(
            """(path) => new Promise((resolve) => {
                const ws = new WebSocket("ws://" + location.host + path);
                ws.onopen = () => resolve("open");
                ws.onclose = (event) => resolve("closed " + event.code);
            })""",
            "/ws" + path,
        )
        assert outcome.startswith("closed")
    finally:
        bob.context.close()
