"""MCP tools over a real stdio server (tests/mcp_server.py) in the run's sandbox.

The server runs with this interpreter and the SDK from this virtualenv, both
shown read-only to the sandbox; it notes every call in the run's /tmp, so a
test sees whether it ran at all.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import mcp
import pytest

from roles.memory_rules import MemoryRules
from roles.tools import Toolbox, ToolboxConfig
from roles.tools.errors import ToolError, ToolPaused
from roles.tools.mcp import McpServer, discover
from roles.tools.sandbox import Sandbox
from tests.sandbox.conftest import VICTIM_TEXT
from tests.unit.test_tools_toolbox import Operator

COUNT = "mcp__notes__count_lines"
DELETE = "mcp__notes__delete_file"
TOUCH = "mcp__notes__touch_file"


@pytest.fixture
def server(base) -> McpServer:
    folder = base / "notes-server"
    folder.mkdir()
    shutil.copy(Path(__file__).parent.parent / "mcp_server.py", folder / "server.py")
    site = Path(mcp.__file__).resolve().parent.parent
    python = Path(sys.base_prefix)
    return McpServer(
        "notes",
        (str(python / "bin" / "python3"), str(folder / "server.py")),
        (("PYTHONPATH", str(site)),),
        (python, site, folder),
    )


@pytest.fixture
def sandbox(policy, workspace) -> Sandbox:
    return Sandbox(policy, run_key=workspace.name, workspace=workspace)


@pytest.fixture
def tools(server, sandbox):
    def run(command: str) -> str:
        done = sandbox.showing(server.paths).run(
            command,
            timeout_s=30,
            output_cap=1_000_000,
            cancelled=lambda: False,
            track=lambda *_: None,
            kill_grace_s=1,
        )
        done.discard()
        return done.output

    return discover(server, run)


def toolbox(sandbox, tools, operator, **settings) -> Toolbox:
    config = ToolboxConfig(mcp_tools=tools, shell_timeout_s=30, **settings)
    return Toolbox(sandbox.workspace, config, sandbox=sandbox, approve=operator)


def calls(sandbox) -> list[str]:
    log = sandbox.tmp / "mcp-calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_discovery_lists_each_tool_with_its_schema_and_annotations(tools):
    found = {t.qualified: t for t in tools}
    assert set(found) == {COUNT, DELETE, TOUCH}
    assert found[COUNT].read_only and not found[DELETE].read_only
    assert found[DELETE].destructive is True
    assert found[TOUCH].destructive is None  # not annotated
    schema = found[DELETE].input_schema
    assert schema["required"] == ["path"]
    assert schema["properties"]["path"]["type"] == "string"


def test_the_model_is_offered_the_tools_beside_the_built_in_ones(sandbox, tools):
    specs = {s.name: s for s in toolbox(sandbox, tools, Operator(False)).specs()}
    assert {"shell", "read_file", COUNT, DELETE, TOUCH} <= set(specs)
    assert specs[COUNT].parameters["required"] == ["path"]
    assert "notes" in specs[COUNT].description


def test_a_read_only_tool_runs_without_an_ask_and_is_evidence(sandbox, tools):
    operator = Operator(False)
    box = toolbox(sandbox, tools, operator)
    output = box.call(COUNT, {"path": "victim.txt"})
    assert output == "victim.txt has 2 lines"
    assert operator.asks == []
    assert box.evidence == [f'{COUNT}: {{"path": "victim.txt"}} → {output}']
    assert calls(sandbox) == ["count_lines victim.txt"]


def test_a_denied_destructive_tool_runs_nothing(sandbox, tools, workspace):
    operator = Operator(False)
    box = toolbox(sandbox, tools, operator)
    output = box.call(DELETE, {"path": "victim.txt"})
    assert output.startswith("[LAW1] the MCP tool 'delete_file' of server 'notes'")
    assert "denied by the operator; nothing ran" in output
    [ask] = operator.asks
    assert (ask.tool, ask.args) == (DELETE, {"path": "victim.txt"})
    assert ask.command == 'mcp notes delete_file {"path": "victim.txt"}'
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT
    assert calls(sandbox) == []
    assert box.records[-1].name == DELETE and box.records[-1].output == output


def test_an_approved_destructive_tool_deletes_after_its_effect_is_shown(
    sandbox, tools, workspace
):
    operator = Operator(True)
    box = toolbox(sandbox, tools, operator)
    assert box.call(DELETE, {"path": "victim.txt"}) == "deleted victim.txt"
    assert not (workspace / "victim.txt").exists()
    before, effect = operator.asks
    assert before.changes == ()
    assert [c["path"] for c in effect.changes] == [str(workspace / "victim.txt")]
    assert effect.tool == DELETE


def test_an_unannotated_tool_asks_before_it_runs(sandbox, tools, workspace):
    operator = Operator(False)
    output = toolbox(sandbox, tools, operator).call(TOUCH, {"path": "new.txt"})
    assert "not annotated read-only" in output
    assert not (workspace / "new.txt").exists()
    assert calls(sandbox) == []


def test_a_parked_call_resumes_with_the_operators_answers(sandbox, tools, workspace):
    def parks(ask):
        raise ToolPaused()

    args = {"path": "victim.txt"}
    with pytest.raises(ToolPaused) as first:
        toolbox(sandbox, tools, parks).call(DELETE, args)
    pending = json.loads(json.dumps(first.value.pending))
    assert pending["kind"] == "call" and calls(sandbox) == []

    def answers(ask):  # the resumed subtask asks the same again: approved
        if ask.changes == () and ask.tool == pending["ask"]["tool"]:
            return True
        raise ToolPaused()

    with pytest.raises(ToolPaused) as second:
        toolbox(sandbox, tools, answers).call(DELETE, args)
    effect = json.loads(json.dumps(second.value.pending))
    assert effect["kind"] == "effect" and (workspace / "victim.txt").exists()
    box = toolbox(sandbox, tools, Operator(False))
    box.settle(effect, True)
    assert box.call(DELETE, args) == "deleted victim.txt"
    assert not (workspace / "victim.txt").exists()


def test_a_ggs_blocked_mcp_tool_is_refused_and_not_offered(sandbox, tools, workspace):
    box = toolbox(sandbox, tools, Operator(True), blocked_tools={DELETE})
    assert DELETE not in {s.name for s in box.specs()}
    with pytest.raises(
        ToolError, match="blocked by GGS: tool 'mcp__notes__delete_file'"
    ):
        box.call(DELETE, {"path": "victim.txt"})
    assert (workspace / "victim.txt").exists() and calls(sandbox) == []


def test_a_ggs_blocked_target_is_refused_for_an_mcp_tool(sandbox, tools):
    box = toolbox(sandbox, tools, Operator(True), blocked_targets={"victim.txt"})
    with pytest.raises(ToolError, match="blocked by GGS: path 'victim.txt'"):
        box.call(COUNT, {"path": "victim.txt"})
    assert calls(sandbox) == []


def test_memory_avoid_refuses_an_mcp_tool(sandbox, tools, workspace):
    rules = MemoryRules(avoid={(DELETE, "victim.txt"): "it lost data"})
    config = ToolboxConfig(mcp_tools=tools, shell_timeout_s=30)
    box = Toolbox(
        workspace, config, sandbox=sandbox, approve=Operator(True), memory_rules=rules
    )
    with pytest.raises(ToolError, match="avoided by memory"):
        box.call(DELETE, {"path": "victim.txt"})
    assert (workspace / "victim.txt").exists() and calls(sandbox) == []


def test_arguments_outside_the_schema_are_refused(sandbox, tools):
    operator = Operator(True)
    box = toolbox(sandbox, tools, operator)
    with pytest.raises(ToolError, match="'path' is a required property"):
        box.call(DELETE, {"file": "victim.txt"})
    assert operator.asks == [] and calls(sandbox) == []
