"""Discovery reads every page of ``tools/list``, and cuts a server that pages
without end (tests/mcp_paging_server.py, over real stdio and streamable HTTP)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roles.tools.mcp import MAX_PAGES, MAX_TOOLS, McpServer, discover
from roles.tools.shell import run_shell

SERVER = Path(__file__).parent.parent / "mcp_paging_server.py"


def stdio(tmp_path: Path, *counts: str) -> tuple[McpServer, object]:
    server = McpServer("paging", (sys.executable, str(SERVER), *counts))
    return server, lambda command: run_shell(command, cwd=tmp_path, timeout_s=30)


def names(tools) -> list[str]:
    return [tool.name for tool in tools]


def test_every_page_of_a_stdio_servers_tools_is_read(tmp_path, caplog):
    server, run = stdio(tmp_path, "5", "2")
    with caplog.at_level(logging.WARNING, logger="roles.tools.mcp"):
        tools = discover(server, run)
    assert names(tools) == [f"tool_{i}" for i in range(5)]
    assert tools[4].qualified == "mcp__paging__tool_4"
    assert "cut" not in caplog.text


def test_a_stdio_server_listing_tools_without_end_is_cut_at_the_cap(tmp_path, caplog):
    server, run = stdio(tmp_path, "forever", "150")
    with caplog.at_level(logging.WARNING, logger="roles.tools.mcp"):
        tools = discover(server, run)
    assert names(tools) == [f"tool_{i}" for i in range(MAX_TOOLS)]
    assert f"MCP server 'paging': tools/list cut: more than {MAX_TOOLS}" in caplog.text


@pytest.fixture
def http_server(tmp_path):
    """Start the paging server over HTTP with ``counts``; stop it afterwards."""
    procs = []

    def start(*counts: str) -> McpServer:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        argv = [sys.executable, str(SERVER), *counts, "http", str(port)]
        log = (tmp_path / "server.log").open("w")
        procs.append(subprocess.Popen(argv, stdout=log, stderr=log))
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return McpServer("web", url=f"http://127.0.0.1:{port}/mcp")
            except OSError:
                if time.monotonic() > deadline or procs[-1].poll() is not None:
                    pytest.fail((tmp_path / "server.log").read_text())
                time.sleep(0.1)

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def test_every_page_of_an_http_servers_tools_is_read(http_server):
    tools = discover(http_server("7", "3"), run=lambda command: "", timeout_s=20)
    assert names(tools) == [f"tool_{i}" for i in range(7)]


def test_an_http_server_paging_without_end_is_cut_after_the_last_page_allowed(
    http_server, caplog
):
    server = http_server("forever", "1")
    with caplog.at_level(logging.WARNING, logger="roles.tools.mcp"):
        tools = discover(server, run=lambda command: "", timeout_s=20)
    assert names(tools) == [f"tool_{i}" for i in range(MAX_PAGES)]
    assert (
        f"MCP server 'web': tools/list cut: still a next page after {MAX_PAGES} pages"
        in caplog.text
    )
