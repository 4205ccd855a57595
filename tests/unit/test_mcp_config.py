"""ARTOO_MCP_CONFIG: the servers a small JSON file declares, or a clear refusal;
and what a server's answer reads as."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from mcp_types import ListToolsResult

from artoo_web.env import envmcp
from roles.tools import Toolbox
from roles.tools.errors import ToolError
from roles.tools.mcp import McpServer, McpTool, ToolPages, discover, offered
from roles.tools.mcp_wire import STDERR_MARK, render
from roles.tools.specs import TOOL_SPECS


def config(tmp_path: Path, data) -> dict[str, str]:
    path = tmp_path / "mcp.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return {"ARTOO_MCP_CONFIG": str(path)}


def test_unset_declares_no_server():
    assert envmcp("ARTOO_MCP_CONFIG", {}) == ()


def test_a_stdio_server_is_read_with_its_env_and_paths(tmp_path):
    entry = {"command": ["python3", "/srv/notes.py"], "env": {"B": "2", "A": "1"}}
    entry["paths"] = ["/srv"]
    [server] = envmcp(
        "ARTOO_MCP_CONFIG", config(tmp_path, {"servers": {"notes": entry}})
    )
    assert server == McpServer(
        "notes", ("python3", "/srv/notes.py"), (("A", "1"), ("B", "2")), (Path("/srv"),)
    )


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ("{not json", "is not JSON"),
        ({"notes": {"command": ["x"]}}, 'one object: {"servers"'),
        ({"servers": {"a__b": {"command": ["x"]}}}, "server 'a__b': a name is"),
        ({"servers": {"notes": {"command": "python3 s.py"}}}, '"command" must be'),
        ({"servers": {"notes": {"command": []}}}, '"command" must be'),
        ({"servers": {"notes": {"command": ["x"], "env": {"A": 1}}}}, '"env" must'),
        ({"servers": {"notes": {"command": ["x"], "paths": ["rel"]}}}, "absolute"),
        ({"servers": {"notes": {"command": ["x"], "cwd": "/"}}}, "unknown keys"),
        (
            {"servers": {"web": {"url": "http://10.0.0.7:9000/mcp"}}},
            "10.0.0.7 is not this machine's loopback",
        ),
        ({"servers": {"web": {"url": "ftp://127.0.0.1/mcp"}}}, "http:// or https://"),
        (
            {"servers": {"web": {"url": "http://127.0.0.1/mcp", "command": ["x"]}}},
            'takes only a "url"',
        ),
    ],
)
def test_a_malformed_config_is_refused_saying_what_is_wrong(tmp_path, data, says):
    env = config(tmp_path, data)
    with pytest.raises(ImproperlyConfigured, match="ARTOO_MCP_CONFIG") as refused:
        envmcp("ARTOO_MCP_CONFIG", env)
    assert says in str(refused.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.0.1", "[::1]", "localhost"])
def test_a_streamable_http_server_on_the_loopback_is_read(tmp_path, host):
    url = f"http://{host}:8931/mcp"
    env = config(tmp_path, {"servers": {"web": {"url": url}}})
    assert envmcp("ARTOO_MCP_CONFIG", env) == (McpServer("web", url=url),)


def test_a_missing_file_is_refused():
    with pytest.raises(ImproperlyConfigured, match="cannot read /nonexistent"):
        envmcp("ARTOO_MCP_CONFIG", {"ARTOO_MCP_CONFIG": "/nonexistent/mcp.json"})


def test_two_tools_offered_under_one_name_are_refused():
    server = McpServer("notes", ("x",))
    tool = McpTool(server, "count", "", {"type": "object"}, read_only=True)
    with pytest.raises(ValueError, match="two tools would be offered as"):
        offered([tool, tool], TOOL_SPECS)


def test_a_result_is_rendered_with_the_sandboxs_refusal_after_it():
    response = {"jsonrpc": "2.0", "id": "artoo-1", "result": {"content": []}}
    response["result"]["content"] = [{"type": "text", "text": "wrote big.bin"}]
    output = (
        f"[exit code 0]\n{json.dumps(response)}\n{STDERR_MARK}\nserver log\n"
        "[sandbox] the command wrote 2000 MB; nothing was applied\n"
    )
    assert render(output) == (
        "wrote big.bin\n[sandbox] the command wrote 2000 MB; nothing was applied"
    )


def test_no_answer_is_an_error_showing_what_the_server_printed():
    output = f"[exit code 1]\n{STDERR_MARK}\nTraceback: ImportError: no mcp\n"
    with pytest.raises(ToolError, match="(?s)gave no answer.*ImportError: no mcp"):
        render(output)


def test_without_servers_the_model_is_offered_exactly_the_built_in_tools(tmp_path):
    assert Toolbox(tmp_path).specs() == list(TOOL_SPECS.values())


def test_a_server_listing_one_name_twice_is_refused():
    listed = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}] * 2}
    response = {"jsonrpc": "2.0", "id": "artoo-1", "result": listed}
    output = f"[exit code 0]\n{json.dumps(response)}\n{STDERR_MARK}\n"
    with pytest.raises(ValueError, match="two tools would be offered as 'mcp__s__a'"):
        discover(McpServer("s", ("x",)), lambda command: output)


def test_a_server_sending_one_cursor_twice_is_cut_there():
    page = ListToolsResult.model_validate(
        {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p"}
    )
    pages = ToolPages()
    assert pages.take(page) == "p"
    assert pages.take(page) is None
    assert pages.cut == "the server sent the cursor 'p' twice"
    assert [tool.name for tool in pages.tools] == ["a", "a"]
