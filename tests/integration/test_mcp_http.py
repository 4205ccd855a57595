"""MCP tools of a real streamable HTTP server on the loopback (tests/mcp_server.py).

The server runs as its own process in a scratch directory (its paths are
relative to it) and notes every call in that directory's mcp-calls.log.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig
from roles.tools.errors import ToolError
from roles.tools.mcp import McpServer, discover
from tests.unit.test_tools_toolbox import Operator

pytestmark = pytest.mark.slow

COUNT = "mcp__web__count_lines"
DELETE = "mcp__web__delete_file"
SERVER = Path(__file__).parent.parent / "mcp_server.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    return tmp_path


@pytest.fixture
def server(folder):
    port = free_port()
    env = {**os.environ, "TMPDIR": str(folder)}
    argv = [sys.executable, str(SERVER), "http", str(port)]
    with (folder / "server.log").open("w") as log:
        proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail((folder / "server.log").read_text())
                time.sleep(0.1)
        yield McpServer("web", url=f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def tools(server):
    return discover(server, run=lambda command: "", timeout_s=20)


def calls(folder: Path) -> list[str]:
    log = folder / "mcp-calls.log"
    return log.read_text().splitlines() if log.exists() else []


def toolbox(workspace: Path, tools, operator) -> Toolbox:
    config = ToolboxConfig(mcp_tools=tools, shell_timeout_s=20)
    return Toolbox(workspace, config, approve=operator)


def test_an_http_servers_tools_are_listed_with_their_annotations(tools):
    found = {t.qualified: t for t in tools}
    assert {COUNT, DELETE} <= set(found)
    assert found[COUNT].read_only and found[DELETE].destructive is True
    assert found[DELETE].input_schema["required"] == ["path"]


def test_a_read_only_http_tool_runs_without_an_ask(tools, folder, tmp_path_factory):
    operator = Operator(False)
    box = toolbox(tmp_path_factory.mktemp("ws"), tools, operator)
    assert box.call(COUNT, {"path": "notes.txt"}) == "notes.txt has 3 lines"
    assert operator.asks == [] and calls(folder) == ["count_lines notes.txt"]
    assert box.evidence[-1].startswith(f'{COUNT}: {{"path": "notes.txt"}}')


def test_a_denied_http_tool_is_never_sent(tools, folder, tmp_path_factory):
    operator = Operator(False)
    box = toolbox(tmp_path_factory.mktemp("ws"), tools, operator)
    output = box.call(DELETE, {"path": "notes.txt"})
    assert output.startswith("[LAW1] the MCP tool 'delete_file' of server 'web'")
    [ask] = operator.asks
    assert ask.command == 'mcp web delete_file {"path": "notes.txt"}'
    assert (folder / "notes.txt").exists() and calls(folder) == []


def test_an_approved_http_tool_runs_once_asked(tools, folder, tmp_path_factory):
    operator = Operator(True)
    box = toolbox(tmp_path_factory.mktemp("ws"), tools, operator)
    assert box.call(DELETE, {"path": "notes.txt"}) == "deleted notes.txt"
    assert len(operator.asks) == 1 and not (folder / "notes.txt").exists()


def test_a_server_that_is_gone_is_a_tool_error(tools, server, tmp_path_factory):
    gone = McpServer("web", url=f"http://127.0.0.1:{free_port()}/mcp")
    moved = [replace(tool, server=gone) for tool in tools]
    box = toolbox(tmp_path_factory.mktemp("ws"), moved, Operator(True))
    with pytest.raises(ToolError, match="the MCP server at http://127.0.0.1"):
        box.call(COUNT, {"path": "notes.txt"})
