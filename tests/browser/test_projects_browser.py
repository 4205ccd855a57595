"""A project's page in Debian's Chromium against a real cluster of processes.

Every model call, the project agents' and each task Run's, goes over HTTP to a
scripted OpenAI-compatible server in this process. A few of its replies wait on
a gate the test opens, so the page can be watched at each stage of the project.
"""

from __future__ import annotations

import json
import re
import threading

import pytest

from tests.browser import test_dashboard_browser as dashboard
from tests.integration.test_pipeline_llm import accept, judge, plan, text_of
from tests.integration.test_projects_flow import named_file, perceive, write
from tests.llm_server import ScriptedLLMServer

browser = dashboard.browser
logged_in = dashboard.logged_in

pytestmark = dashboard.BROWSER_MARKS

REMIT = "A notes file beside the readme"
MILESTONE = "User can read the notes file"
FINISHED = "Write the notes file"
CANCELLED = "Keep scoping until cancelled"
GATE_S = 60
ALL_DONE = re.compile(r"all 1 milestones? complete")
PROJECT_PAGE = re.compile(r"/projects/[0-9a-f-]{36}/$")


class Gates:
    """Replies held until the test opens their gate (all open at teardown)."""

    def __init__(self, *names: str):
        self.events = {name: threading.Event() for name in names}

    def hold(self, name: str, reply: str) -> str:
        self.events[name].wait(GATE_S)
        return reply

    def open(self, name: str) -> None:
        self.events[name].set()

    def open_all(self) -> None:
        for event in self.events.values():
            event.set()


def script(llm: ScriptedLLMServer, gates: Gates) -> None:
    """Script one project that completes in one task; others stay scoping."""

    def scope(request):
        milestone = {"description": MILESTONE, "verify": ["ls proj-1.txt"]}
        body = {"remit": REMIT, "milestones": [milestone]}
        # Only the project that completes is ever let past its scope.
        gate = "scope" if FINISHED in text_of(request) else "other-scope"
        return gates.hold(gate, json.dumps(body))

    def task_plan(request):
        project = request.header("X-Artoo-Run")
        asked = [r.header("X-Artoo-Run") for r in llm.requests_for("TaskPlan")]
        if asked.count(project) > 1:
            return json.dumps({"action": "milestone_done"})
        body = {
            "action": "implement",
            "task_description": "Write proj-1.txt",
            "implementation_plan": "ok-step write proj-1.txt with its content",
        }
        return json.dumps(body)

    def assessor(request):
        return gates.hold("assessor", json.dumps({"verdict": "milestone_complete"}))

    llm.responder(scope, role="Scope")
    llm.responder(task_plan, role="TaskPlan")
    llm.default_reply(json.dumps({"passed": True}), role="QA")
    llm.responder(assessor, role="Assessor")
    llm.responder(perceive, role="R1")
    llm.responder(lambda r: plan(f"ok-step write {named_file(r)}"), role="R2")
    llm.responder(write, role="R3")
    llm.responder(judge, role="R4a")
    llm.responder(accept, role="R4b")


@pytest.fixture(scope="module")
def model():
    gates = Gates("scope", "assessor", "other-scope")
    with ScriptedLLMServer() as llm:
        script(llm, gates)
        llm.gates = gates
        try:
            yield llm
        finally:
            gates.open_all()


@pytest.fixture(scope="module")
def allowed(tmp_path_factory):
    # An operator's directory the sandbox's uid may enter (pytest makes it 700,
    # which would refuse the run's commands and file tools alike).
    path = tmp_path_factory.mktemp("allowed")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, model, allowed):
    from django.conf import settings

    from devtools.cluster import Cluster

    env = {
        "REDIS_URL": settings.REDIS_URL,
        "ARTOO_ALLOWED_PATHS": str(allowed),
        **model.env(ARTOO_LLM_RETRIES="1"),
    }
    with Cluster(
        tmp_path_factory.mktemp("projects-cluster"),
        processes=("web", "pipeline", "memory"),
        env=env,
        concurrency=4,
    ) as running:
        running.manage("shell", "-c", dashboard.CREATE_USERS)
        try:
            yield running
        finally:
            # A held reply would keep a worker busy past the cluster's stop.
            model.gates.open_all()


@pytest.fixture(scope="module", autouse=True)
def patient_expect():
    """Give each expect() as long as the pages' other waits (not 5 s)."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=dashboard.WAIT_MS)
    yield
    playwright_expect.set_options(timeout=None)


def expect(target):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture
def alice(browser, cluster):
    page = logged_in(browser, cluster, "alice")
    yield page
    page.context.close()


def start_project(
    page, request: str, directory, verify: str = "", protected: str = ""
) -> None:
    """Start a project from the form on the project list; land on its page."""
    page.goto("/projects/")
    page.get_by_label("New project").fill(request)
    page.get_by_label("Working directory").fill(str(directory))
    page.get_by_label("Verification commands").fill(verify)
    page.get_by_label("Protected paths").fill(protected)
    page.get_by_role("button", name="Start project").click()
    page.wait_for_url(PROJECT_PAGE)
    dashboard.wait_live(page)


def expect_status(page, label: str) -> None:
    expect(page.locator("#project-status")).to_have_text(label)


def notes_directory(allowed):
    directory = allowed / "notes"
    directory.mkdir()
    (directory / "README.txt").write_text("Notes live here.\n")
    return directory


def test_a_project_fills_its_page_live_to_its_end(alice, model, allowed):
    # The project's own command comes before the milestone's; both must pass.
    start_project(
        alice, FINISHED, notes_directory(allowed), "test -f README.txt\n", "README.txt"
    )
    alice.evaluate("window.sameDocument = true")
    expect_status(alice, "Scoping")
    config = alice.locator("#project-config")
    expect(config).to_contain_text("Done only when these pass: test -f README.txt")
    expect(config).to_contain_text("Protected: README.txt")
    expect(alice.locator("#project-remit")).to_contain_text("has not answered yet")

    model.gates.open("scope")
    expect(alice.locator("#project-remit")).to_contain_text(REMIT)
    expect(alice.locator("#milestone-0")).to_contain_text(MILESTONE)

    # The Assessor's verdict is held: the task is done and its run listed.
    expect_status(alice, "Assessing")
    run_link = alice.locator("#project-runs a", has_text="t1-a1")
    expect(run_link).to_have_count(1)
    expect(alice.locator("#project-runs li", has_text="t1-a1")).to_contain_text("Done")
    expect(alice.locator("#milestone-0")).to_contain_text("Write proj-1.txt")
    expect(alice.locator("#project-verdicts")).to_contain_text("No verdicts yet.")
    expect(alice.locator("#cancel-project")).to_be_visible()

    model.gates.open("assessor")
    expect_status(alice, "Complete")
    expect(alice.locator("#project-verdicts li")).to_contain_text("milestone_complete")
    expect(alice.locator("#milestone-0 .status")).to_have_text("done")
    expect(alice.locator("#project-reason")).to_have_text(ALL_DONE)
    expect(alice.locator("#cancel-project")).to_have_count(0)
    assert alice.evaluate("window.sameDocument === true")

    run_path = run_link.get_attribute("href")
    run_link.click()
    alice.wait_for_url(f"**{run_path}")
    expect(alice.locator("pre.input")).to_contain_text("Write proj-1.txt")
    expect(alice.locator("#run-status")).to_have_text("Done")

    # The task QA passed is a commit, listed on the project page; its link
    # opens that commit's diff, which holds the file the task wrote.
    alice.go_back()
    listed = alice.locator("#task-commit-t1-a1")
    short = listed.locator("code").inner_text()
    listed.locator("a").click()
    alice.wait_for_url("**/tasks/t1-a1")
    expect(alice.locator("#task-commit")).to_contain_text(f"its work is commit {short}")
    expect(alice.locator("#task-diff")).to_contain_text("proj-1.txt")


def test_a_bad_verification_command_is_refused_under_its_field(alice, allowed):
    start = "A project whose check is too long"
    alice.goto("/projects/")
    alice.get_by_label("New project").fill(start)
    alice.get_by_label("Working directory").fill(str(allowed / "too-long"))
    alice.get_by_label("Verification commands").fill("true\n" + "x" * 301)
    alice.get_by_role("button", name="Start project").click()

    expect(alice.get_by_role("alert")).to_have_text(
        "Command 2: A verification command is at most 300 characters, not 301."
    )
    expect(alice.get_by_label("New project")).to_have_value(start)
    assert start not in alice.locator("#project-table").inner_text()
    assert not (allowed / "too-long").exists()


def test_cancel_ends_an_active_project_from_its_page(alice, allowed):
    start_project(alice, CANCELLED, allowed / "cancelled")
    expect_status(alice, "Scoping")

    alice.get_by_role("button", name="Cancel project").click()

    expect_status(alice, "Cancelled")
    expect(alice.locator("#project-reason")).to_have_text("cancelled by its owner")
    expect(alice.locator("#cancel-project")).to_have_count(0)
    alice.reload()
    expect_status(alice, "Cancelled")
    expect(alice.locator("#cancel-project")).to_have_count(0)


def test_another_user_cannot_open_the_project_page(alice, browser, cluster, allowed):
    start_project(alice, "A private project", allowed / "private")
    path = alice.url.removeprefix(cluster.url)
    ws_path = alice.locator("[data-ws-path]").get_attribute("data-ws-path")
    bob = logged_in(browser, cluster, "bob")
    try:
        response = bob.goto(path)
        assert response.status == 404
        assert bob.locator("h1").inner_text() == "Not found"
        assert "A private project" not in bob.content()
        outcome = bob.evaluate(
            """(path) => new Promise((resolve) => {
                const ws = new WebSocket("ws://" + location.host + path);
                ws.onopen = () => resolve("open");
                ws.onclose = (event) => resolve("closed " + event.code);
            })""",
            ws_path,
        )
        assert outcome.startswith("closed")
        bob.goto("/projects/")
        assert "A private project" not in bob.locator("#project-table").inner_text()
    finally:
        bob.context.close()
