"""A new user's first MCP tools, in Debian's Chromium, traced to a collector.

A cluster of real processes (web, the pipeline and memory workers) reads the
notes server of tests/mcp_server.py from ``ARTOO_MCP_CONFIG``, installed
outside the checkout as an operator would (``test_mcp_pipeline``'s ``server``);
every model call goes over HTTP to a scripted server in this process, and every
process exports its spans to an OTLP/HTTP receiver here. A run's replies are
scripted once the test has read the run's id from its page's URL.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser import test_dashboard_browser as dashboard
from tests.conftest import wait_until
from tests.integration import test_mcp_pipeline as mcp_pipeline
from tests.integration.test_pipeline_llm import judge, plan
from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec
from tests.otlp_receiver import OtlpReceiver

browser = dashboard.browser
server = mcp_pipeline.server

pytestmark = dashboard.BROWSER_MARKS

COUNT = "mcp__notes__count_lines"
DELETE = "mcp__notes__delete_file"
# A run of the scripted model takes seconds; a busy 2-core box makes it more.
RUN_MS = 120_000
SCRIPT_WAIT_S = 30
SPANS_WAIT_S = 30
ENDED = ("Done", "Failed", "Cancelled")


@dataclass(frozen=True)
class Scenario:
    """What the scripted model does in one run: R3's one tool call, then its
    answer, ``(status, output)``, made from what the tool printed."""

    task: str
    call: ToolCallSpec
    answer: Callable[[str], tuple[str, str]]
    merged: str = "done"


class Script:
    """The scripted model's replies, by run: R1 restates the task, R2 plans it
    as one step, R3 makes the scenario's call and answers, R4a and R4b accept."""

    def __init__(self) -> None:
        self._runs: dict[str, Scenario] = {}
        self._known = threading.Condition()

    def expect(self, run_id: str, scenario: Scenario) -> None:
        with self._known:
            self._runs[run_id] = scenario
            self._known.notify_all()

    def of(self, request) -> Scenario:
        """Return the scenario of the request's run, once the test has named it."""
        run_id = request.header("X-Artoo-Run")
        with self._known:
            self._known.wait_for(lambda: run_id in self._runs, SCRIPT_WAIT_S)
            return self._runs[run_id]

    def perceive(self, request) -> str:
        task = self.of(request).task
        spec = {"task_id": "notes_task", "intent": task, "constraints": {}}
        return json.dumps({**spec, "raw_input": task})

    def plan(self, request) -> str:
        return plan(f"ok-step {self.of(request).task}")

    def execute(self, request) -> Step | str:
        scenario = self.of(request)
        offered = {t["function"]["name"] for t in request.tools or ()}
        results = [m for m in request.messages if m.get("role") == "tool"]
        if results:
            status, output = scenario.answer(str(results[-1].get("content") or ""))
        elif scenario.call.name in offered:
            return Step(tool_calls=(scenario.call,))
        else:
            status, output = "failed", f"{scenario.call.name} is not offered"
        return json.dumps({"status": status, "output": output})

    def accept(self, request) -> str:
        body = {
            "verdict": "accept",
            "summary": "all done",
            "merged_output": self.of(request).merged,
            "criteria_results": [],
            "gap_summary": "",
        }
        return json.dumps(body)


@pytest.fixture(scope="module")
def model():
    script = Script()
    with ScriptedLLMServer() as llm:
        llm.responder(script.perceive, role="R1")
        llm.responder(script.plan, role="R2")
        llm.responder(script.execute, role="R3")
        llm.responder(judge, role="R4a")
        llm.responder(script.accept, role="R4b")
        llm.script = script
        yield llm


@pytest.fixture(scope="module")
def receiver():
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def allowed():
    """An operator's directory the runs may use (``ARTOO_ALLOWED_PATHS``)."""
    path = Path(tempfile.mkdtemp(prefix="artoo-mcp-browser-", dir="/var/tmp"))
    path.chmod(0o755)  # entered by the sandbox's uid
    yield path
    shutil.rmtree(path)


@pytest.fixture(scope="module")
def mcp_config(server, tmp_path_factory):
    """Write the file ``ARTOO_MCP_CONFIG`` names, in docs/mcp.md's format."""
    entry = {
        "command": list(server.command),
        "env": dict(server.env),
        "paths": [str(p) for p in server.paths],
    }
    path = tmp_path_factory.mktemp("mcp-config") / "mcp.json"
    path.write_text(json.dumps({"servers": {server.name: entry}}))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, model, receiver, allowed, mcp_config):
    from devtools.cluster import Cluster

    env = {
        "REDIS_URL": "",  # an embedded Redis of its own: no other test's queues
        "ARTOO_ALLOWED_PATHS": str(allowed),
        "ARTOO_MCP_CONFIG": str(mcp_config),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "artoo-browser",
        # Batches leave every 200 ms (5 s by default): the spans waits stay short.
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        **model.env(ARTOO_LLM_RETRIES="1"),
    }
    with Cluster(
        tmp_path_factory.mktemp("mcp-cluster"),
        processes=("web", "pipeline", "memory"),
        env=env,
        concurrency=4,
    ) as running:
        running.manage("shell", "-c", dashboard.CREATE_USERS)
        yield running


@pytest.fixture
def alice(browser, cluster):
    page = dashboard.logged_in(browser, cluster, "alice")
    yield page
    page.context.close()


def submitted(page, model, scenario: Scenario) -> str:
    """Submit the scenario's task from the run list; return the run's id once
    its replies are scripted and its page is live."""
    run_id = dashboard.submit(page, scenario.task).strip("/").split("/")[-1]
    model.script.expect(run_id, scenario)
    dashboard.wait_live(page)
    return run_id


def wait_ended(page) -> str:
    """Wait until the run page says the run ended; return its status label."""
    page.wait_for_function(
        "(ended) => ended.includes("
        "document.getElementById('run-status').textContent.trim())",
        arg=list(ENDED),
        timeout=RUN_MS,
    )
    return page.locator("#run-status").inner_text().strip()


def tool_evidence(page) -> list[str]:
    """Return every attempt's tool evidence on the run page, folded or not."""
    return page.locator("#lanes .evidence-list code").all_text_contents()


def approvals_of(cluster, run_id: str) -> list[list]:
    """Return the run's approvals as stored: tool, status and who decided."""
    code = (
        "import json; from artoo_web.models import Approval; "
        "print(json.dumps([[a.tool, a.status, a.decided_by and a.decided_by"
        f".username] for a in Approval.objects.filter(run_id={run_id!r})]))"
    )
    return json.loads(cluster.manage("shell", "-c", code).stdout.splitlines()[-1])


def trace_of(receiver, run_id: str, *names: str) -> dict:
    """Wait until the receiver holds a span of each name in the run's trace;
    return the trace's spans by name."""
    trace_id = uuid.UUID(run_id).int

    def found():
        spans: dict[str, list] = {}
        for span in receiver.spans:
            if span.trace_id == trace_id:
                spans.setdefault(span.name, []).append(span)
        return spans if all(n in spans for n in names) else None

    return wait_until(found, timeout=SPANS_WAIT_S, what=f"spans {names}")


def attribute_text(spans: dict) -> str:
    values = [
        v for named in spans.values() for s in named for v in s.attributes.values()
    ]
    return repr(values)


def counted(output: str) -> tuple[str, str]:
    """Answer with the number the notes tool printed, or fail without one."""
    found = re.search(r" has (\d+) lines$", output)
    if found is None:
        return "failed", f"the notes tool gave no count: {output[:120]}"
    return "completed", found[1]


def test_a_read_only_mcp_tool_runs_unasked_and_is_traced_with_its_run(
    alice, cluster, model, receiver, allowed
):
    notes = allowed / "three-lines.txt"
    notes.write_text("one\ntwo\nthree\n")
    notes.chmod(0o644)
    task = f"Count the lines of {notes} with the notes server's tool"
    call = ToolCallSpec(COUNT, {"path": str(notes)}, id="n1")
    run_id = submitted(alice, model, Scenario(task, call, counted, f"{notes.name}: 3"))

    assert wait_ended(alice) == "Done"
    alice.locator("#ggs-timeline code", has_text="init→accept").wait_for()
    dashboard.wait_final(alice)
    assert alice.locator("#final-result pre.output").inner_text() == f"{notes.name}: 3"
    steps = alice.locator("#final-result .steps.completed .evidence")
    assert steps.all_inner_texts() == ["3"]
    assert f'{COUNT}: {{"path": "{notes}"}} → {notes} has 3 lines' in (
        tool_evidence(alice)
    )
    assert alice.locator("#prompts").is_hidden()
    assert approvals_of(cluster, run_id) == []
    assert notes.read_text() == "one\ntwo\nthree\n"

    spans = trace_of(receiver, run_id, "invoke_workflow artoo", f"execute_tool {COUNT}")
    [root] = spans["invoke_workflow artoo"]
    assert root.parent_span_id is None
    assert root.attributes["artoo.run.status"] == "done"
    assert root.attributes["artoo.run.directive"] == "accept"
    # The re-derivation asks R3 again; its same call, refused by GGS, has an error.
    ran = [
        s for s in spans[f"execute_tool {COUNT}"] if "error.type" not in s.attributes
    ]
    [tool] = ran
    assert tool.parent_span_id == root.span_id
    assert tool.attributes["gen_ai.tool.name"] == COUNT
    assert "artoo.tool.parked" not in tool.attributes
    assert str(notes) not in attribute_text(spans)


def test_a_destructive_mcp_tool_denied_on_the_run_page_leaves_the_file(
    alice, cluster, model, receiver, allowed
):
    target = allowed / "keep-me.txt"
    target.write_text("precious\n")
    target.chmod(0o644)
    task = f"Delete the file {target} with the notes server's tool"
    call = ToolCallSpec(DELETE, {"path": str(target)}, id="d1")

    def refused(output: str) -> tuple[str, str]:
        return "failed", f"the operator denied deleting {target.name}: {output[:80]}"

    run_id = submitted(alice, model, Scenario(task, call, refused))

    prompt = alice.locator("#prompts .approval")
    prompt.wait_for(timeout=RUN_MS)
    assert prompt.locator("h3 code").inner_text() == DELETE
    command = f'mcp notes delete_file {{"path": "{target}"}}'
    assert prompt.locator("pre.command").inner_text() == command
    reason = "the MCP tool 'delete_file' of server 'notes' is annotated destructive"
    assert prompt.locator("p", has_text=reason).count() == 1
    prompt.get_by_role("button", name="Deny").click()
    decided = alice.locator("#prompts .decided li")
    decided.filter(has_text="Denied").wait_for()
    assert decided.all_inner_texts() == [f"Denied {command} by alice"]

    # Denied in round 0, the deletion is replanned, then blocked by GGS: the
    # run ends failed without asking again.
    assert wait_ended(alice) == "Failed"
    assert target.read_text() == "precious\n"
    assert approvals_of(cluster, run_id) == [[DELETE, "denied", "alice"]]
    denial = f"[LAW1] {reason} — denied by the operator; nothing ran"
    assert f'{DELETE}: {{"path": "{target}"}} → {denial}' in tool_evidence(alice)
    assert alice.locator("#final-result .steps.not-completed").count() == 1

    spans = trace_of(
        receiver, run_id, "invoke_workflow artoo", f"execute_tool {DELETE}"
    )
    [root] = spans["invoke_workflow artoo"]
    assert root.attributes["artoo.run.status"] == "failed"
    assert root.attributes["artoo.run.directive"] == "abandon"
    calls = sorted(spans[f"execute_tool {DELETE}"], key=lambda s: s.start_ns)
    assert {s.parent_span_id for s in calls} == {root.span_id}
    # The call parked on the question, then made again once denied: that span
    # is marked denied, an error; later rounds' calls GGS refused.
    parked, denied, *blocked = calls
    assert parked.attributes["artoo.tool.parked"] is True
    assert "error.type" not in parked.attributes
    assert "artoo.tool.parked" not in denied.attributes
    assert denied.attributes["artoo.tool.denied"] is True
    assert denied.attributes["error.type"] == "law1_denied"
    assert denied.status_code == 2  # STATUS_CODE_ERROR
    assert all(s.attributes["error.type"] == "ToolError" for s in blocked)
