"""An MCP server's tool through a whole run: discovered, asked, parked, resumed.

The scripted model over real HTTP plays every role; R3 calls the destructive
``delete_file`` of tests/mcp_server.py, which runs as a real stdio process in
the run's sandbox. The server's interpreter and a linked copy of this
virtualenv's packages are shown to the sandbox read-only (the checkout itself
is hidden from commands).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import mcp
import pytest

from artoo_web import runs, runtime
from artoo_web.handlers import planner
from artoo_web.models import Approval, BusMessage
from roles.tools.mcp import McpConfigError, McpServer
from roles.tools.sandbox import remove_tree
from tests.conftest import wait_until
from tests.integration.roles.test_planner import directive
from tests.integration.test_approval_parking_llm import Executor, scripted
from tests.integration.test_pipeline_offline import finished
from tests.llm_server import ToolCallSpec

pytestmark = pytest.mark.slow

COUNT = "mcp__notes__count_lines"
DELETE = "mcp__notes__delete_file"
CALLS = [ToolCallSpec(name=DELETE, arguments={"path": "notes.txt"}, id="m1")]


@pytest.fixture(scope="module")
def server():
    """Return the notes server, its code and packages outside the checkout."""
    base = Path(tempfile.mkdtemp(prefix="artoo-mcp-", dir="/var/tmp"))
    base.chmod(0o755)  # read by the sandbox's uid
    site = base / "site"
    here = Path(mcp.__file__).resolve().parent.parent
    try:
        shutil.copytree(here, site, copy_function=os.link)
    except OSError:
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(here, site)
    shutil.copy(Path(__file__).parent.parent / "mcp_server.py", base / "server.py")
    python = Path(sys.base_prefix)
    yield McpServer(
        "notes",
        (str(python / "bin" / "python3"), str(base / "server.py")),
        (("PYTHONPATH", str(site)),),
        (python, base),
    )
    remove_tree(base)


def approval(run, count: int) -> Approval:
    """Wait for the run's ``count``-th question to the operator, still pending."""

    def asked():
        found = list(Approval.objects.filter(run=run))
        pending = len(found) == count and found[-1].status == "pending"
        return found[-1] if pending else None

    return wait_until(asked, timeout=60)


def test_a_denied_mcp_tool_leaves_the_file_and_the_run_goes_on(
    celery_worker, user, monkeypatch, settings, server
):
    settings.ARTOO_MCP_SERVERS = (server,)
    executor = Executor(CALLS, "notes.txt was kept")
    with scripted(monkeypatch, executor, "ok-step remove the notes"):
        run = executor.run = runs.submit(user, "remove the notes")
        executor.submitted.set()
        asked = approval(run, 1)
        assert asked.tool == DELETE
        assert asked.command == 'mcp notes delete_file {"path": "notes.txt"}'
        assert "of server 'notes' is annotated destructive" in asked.reason
        runs.decide_approval(run, asked.id, "deny", user)
        run = finished(run, timeout=90)
    assert (runtime.workspace_for(run) / "notes.txt").read_text() == "seed\n"
    result = BusMessage.objects.filter(run=run, type="ExecutionResult").first()
    [evidence] = result.payload["tool_calls"]
    assert evidence.startswith(f'{DELETE}: {{"path": "notes.txt"}} → [LAW1]')
    assert "nothing ran" in evidence


def test_an_approved_mcp_tool_is_asked_again_for_its_effect_then_applied(
    celery_worker, user, monkeypatch, settings, server
):
    settings.ARTOO_MCP_SERVERS = (server,)
    executor = Executor(CALLS, "notes.txt was removed")
    with scripted(monkeypatch, executor, "ok-step remove the notes") as model:
        run = executor.run = runs.submit(user, "remove the notes")
        executor.submitted.set()
        first = approval(run, 1)
        assert first.changes == []
        runs.decide_approval(run, first.id, "approve", user)
        effect = approval(run, 2)
        workspace = runtime.workspace_for(run)
        assert [c["path"] for c in effect.changes] == [str(workspace / "notes.txt")]
        assert (workspace / "notes.txt").exists()
        runs.decide_approval(run, effect.id, "approve", user)
        run = finished(run, timeout=90)
        answered = model.requests_for("R3")[-1].messages[-1]
    assert not (workspace / "notes.txt").exists()
    assert answered["tool_call_id"] == "m1"
    assert answered["content"] == "deleted notes.txt"


def test_the_planner_is_told_the_mcp_tools_the_executor_gets(
    celery_worker, user, monkeypatch, settings, server
):
    settings.ARTOO_MCP_SERVERS = (server,)
    count = [ToolCallSpec(name=COUNT, arguments={"path": "notes.txt"}, id="c1")]
    executor = Executor(count, "notes.txt has 1 lines")
    with scripted(monkeypatch, executor, "ok-step count the notes") as model:
        run = executor.run = runs.submit(user, "count the lines of the notes")
        executor.submitted.set()
        run = finished(run, timeout=90)
        system = model.requests_for("R2")[0].messages[0]["content"]
        # R3's second turn opens with what the MCP tool answered.
        answered = model.requests_for("R3")[1].messages[-1]
    [told] = [line for line in system.splitlines() if "Executors have" in line]
    assert "shell" in told
    assert all(name in told for name in (COUNT, DELETE, "mcp__notes__touch_file"))
    query = BusMessage.objects.get(run=run, type="MemoryQuery")
    assert {COUNT, DELETE} <= set(query.payload["tools"])
    assert answered["content"] == "notes.txt has 1 lines"


def test_an_mcp_tool_ggs_blocked_is_left_out_of_the_planners_tools(
    run, settings, server
):
    settings.ARTOO_MCP_SERVERS = (server,)
    state = run.load_state()
    state.directive = directive(tools=[DELETE])
    tools = planner.memory_query(run, state).tools
    assert COUNT in tools
    assert DELETE not in tools


def test_a_server_installed_where_the_sandbox_hides_is_refused_clearly(settings):
    inside = settings.BASE_DIR / ".venv" / "bin" / "python3"
    server = McpServer("inside", (str(inside), "/opt/notes/server.py"))
    with pytest.raises(McpConfigError, match="which the sandbox hides from commands"):
        runtime.check_visible(server)
    runtime.check_visible(McpServer("outside", ("/usr/bin/python3", "/opt/s.py")))


def test_a_program_whose_link_leads_where_no_sandbox_looks_is_named(tmp_path):
    # A virtualenv's python is a link to the interpreter it was made from.
    elsewhere = tmp_path / "home" / "pyenv" / "bin"
    elsewhere.mkdir(parents=True)
    (elsewhere / "python3.11").write_text("")
    venv = Path(tempfile.mkdtemp(prefix="artoo-mcp-venv-", dir="/opt"))
    try:
        (venv / "python").symlink_to(elsewhere / "python3.11")
        server = McpServer("linked", (str(venv / "python"), "/opt/s.py"))
        with pytest.raises(McpConfigError, match="once its links are followed") as err:
            runtime.check_visible(server)
        assert str(elsewhere / "python3.11") in str(err.value)
        assert str(elsewhere.parent) in str(err.value)
        shown = McpServer(
            "linked", (str(venv / "python"), "/opt/s.py"), paths=(elsewhere.parent,)
        )
        runtime.check_visible(shown)
    finally:
        shutil.rmtree(venv)
