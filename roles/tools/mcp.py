"""MCP servers' tools offered beside the built-in ones.

An operator declares servers in a small JSON file (``ARTOO_MCP_CONFIG``)::

    {"servers": {"notes": {"command": ["/opt/notes/bin/python", "server.py"],
                           "env": {"NOTES_LIMIT": "10"},
                           "paths": ["/srv/notes-server"]}}}

``paths`` are shown read-only to the server's sandbox, beside the system
directories. Each tool a server lists is offered to the model as
``mcp__<server>__<tool>`` with the server's own JSON schema. Every call runs
the server's command anew in the run's sandbox (``roles.tools.mcp_wire``), so
what it does to files is judged by Law 1 like any command; a tool not
annotated ``readOnlyHint`` is put to the operator before it runs.

A streamable HTTP server already running on this machine's loopback is
declared by its URL instead (``{"url": "http://127.0.0.1:8931/mcp"}``) and
reached with the SDK's client (``roles.tools.mcp_http``), outside any sandbox.

Discovery reads every page of ``tools/list`` up to ``MAX_PAGES`` pages and
``MAX_TOOLS`` tools; a server past either is cut there, with a warning.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
from mcp_types import ListToolsResult, Tool

from roles.llm.client import ToolSpec
from roles.tools import mcp_http, mcp_wire
from roles.tools.errors import ToolError
from roles.tools.law1 import ApprovalAsk

PREFIX = "mcp__"
# What a function name may hold in the chat-completions API.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SERVER_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")
SERVER_KEYS = {"command", "env", "paths"}
HTTP_KEYS = {"url"}
# A server that sends a cursor forever, or thousands of tools, is cut here.
MAX_PAGES = 20
MAX_TOOLS = 200

log = logging.getLogger(__name__)


class McpConfigError(ValueError):
    """The MCP configuration, or what a server lists, cannot be used."""


@dataclass(frozen=True)
class McpServer:
    """One MCP server: a stdio one's command, environment and shown paths, or
    a streamable HTTP one's loopback ``url``."""

    name: str
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    paths: tuple[Path, ...] = ()
    url: str = ""


@dataclass(frozen=True)
class McpTool:
    """One tool of a server as the model sees it, with its annotations."""

    server: McpServer
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    read_only: bool = False
    # The server's destructiveHint as given (None: not said).
    destructive: bool | None = None

    @property
    def qualified(self) -> str:
        """Return the name the model calls: ``mcp__<server>__<tool>``."""
        return f"{PREFIX}{self.server.name}__{self.name}"

    def spec(self) -> ToolSpec:
        """Return the tool's spec for the model, its schema as the server gave it."""
        about = self.description or self.name
        return ToolSpec(
            self.qualified,
            f"{about} (MCP server {self.server.name})",
            self.input_schema,
        )

    def shown(self, args: Mapping[str, Any]) -> str:
        """Return the call as the operator and the records read it."""
        return f"mcp {self.server.name} {self.name} {json.dumps(args, sort_keys=True)}"


def parse_servers(data: Any) -> tuple[McpServer, ...]:
    """Return the servers a parsed config file declares; McpConfigError if malformed."""
    if not isinstance(data, dict) or set(data) != {"servers"}:
        raise McpConfigError('the file must hold one object: {"servers": {…}}')
    servers = data["servers"]
    if not isinstance(servers, dict):
        raise McpConfigError('"servers" must be an object of name → server')
    return tuple(_server(name, entry) for name, entry in servers.items())


def _server(name: str, entry: Any) -> McpServer:
    where = f"server {name!r}"
    if not SERVER_NAME.match(name) or not TOOL_NAME.match(f"{PREFIX}{name}__x"):
        raise McpConfigError(
            f"{where}: a name is letters, digits, '-' and single '_' "
            "(no '__'), short enough for mcp__<server>__<tool> to fit 64 characters"
        )
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where} must be an object")
    if "url" in entry:
        return _http_server(name, entry)
    unknown = set(entry) - SERVER_KEYS
    if unknown:
        raise McpConfigError(f"{where}: unknown keys {sorted(unknown)}")
    command = entry.get("command")
    if not _strings(command) or not command:
        raise McpConfigError(f'{where}: "command" must be a non-empty list of strings')
    env = entry.get("env", {})
    if not isinstance(env, dict) or not _strings([*env, *env.values()]):
        raise McpConfigError(f'{where}: "env" must be an object of strings')
    if any(not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) for k in env):
        raise McpConfigError(f'{where}: "env" names must be shell variable names')
    paths = entry.get("paths", [])
    if not _strings(paths) or not all(p.startswith("/") for p in paths):
        raise McpConfigError(f'{where}: "paths" must be a list of absolute paths')
    return McpServer(
        name, tuple(command), tuple(sorted(env.items())), tuple(map(Path, paths))
    )


def _http_server(name: str, entry: dict) -> McpServer:
    where = f"server {name!r}"
    unknown = set(entry) - HTTP_KEYS
    if unknown:
        raise McpConfigError(
            f'{where}: a streamable HTTP server takes only a "url"; unknown keys '
            f"{sorted(unknown)}"
        )
    url = entry["url"]
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpConfigError(f'{where}: "url" must be an http:// or https:// URL')
    if not _is_loopback(parts.hostname):
        raise McpConfigError(
            f"{where}: {parts.hostname} is not this machine's loopback; only "
            "servers on 127.0.0.0/8, ::1 or localhost are supported"
        )
    return McpServer(name, url=url)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def discover(
    server: McpServer, run: Callable[[str], str], timeout_s: float = 30
) -> tuple[McpTool, ...]:
    """Return the tools ``server`` lists, every page; ``run`` runs a command and
    returns its output (a stdio server's), ``timeout_s`` bounds an HTTP server's
    whole listing.

    Raises McpConfigError when the server does not answer or a tool's name
    cannot be offered.
    """
    pages = ToolPages()
    try:
        if server.url:
            mcp_http.list_tools(server.url, pages.take, timeout_s=timeout_s)
        else:
            cursor = pages.take(_stdio_page(server, run, None))
            while cursor is not None:
                cursor = pages.take(_stdio_page(server, run, cursor))
    except (ToolError, ValueError) as err:
        raise McpConfigError(
            f"MCP server {server.name!r} lists no tools: {err}"
        ) from None
    if pages.cut:
        log.warning(
            "MCP server %r: tools/list cut: %s; %d tools offered",
            server.name,
            pages.cut,
            len(pages.tools),
        )
    tools = [_tool(server, tool) for tool in pages.tools]
    offered(tools, ())  # a server listing one name twice
    return tuple(tools)


def _stdio_page(server: McpServer, run, cursor: str | None) -> ListToolsResult:
    output = run(mcp_wire.list_command(server, cursor))
    return ListToolsResult.model_validate(mcp_wire.result_of(output))


@dataclass
class ToolPages:
    """The pages of one server's ``tools/list`` as they come, within the caps."""

    tools: list[Tool] = field(default_factory=list)
    pages: int = 0
    cursors: set[str] = field(default_factory=set)
    # Why the listing stopped before the server's last page ("" when it did not).
    cut: str = ""

    def take(self, page: ListToolsResult) -> str | None:
        """Keep the page's tools; return the cursor to ask with next, or None."""
        self.pages += 1
        room = MAX_TOOLS - len(self.tools)
        self.tools.extend(page.tools[:room])
        cursor = page.next_cursor
        if len(page.tools) > room:
            self.cut = f"more than {MAX_TOOLS} tools listed"
        elif cursor is None:
            return None
        elif cursor in self.cursors:
            self.cut = f"the server sent the cursor {cursor[:40]!r} twice"
        elif self.pages >= MAX_PAGES:
            self.cut = f"still a next page after {MAX_PAGES} pages"
        else:
            self.cursors.add(cursor)
            return cursor
        return None


def _tool(server: McpServer, tool: Tool) -> McpTool:
    notes = tool.annotations
    made = McpTool(
        server,
        tool.name,
        (tool.description or "").strip(),
        tool.input_schema,
        read_only=bool(notes and notes.read_only_hint),
        destructive=notes.destructive_hint if notes else None,
    )
    if not TOOL_NAME.match(made.qualified):
        raise McpConfigError(
            f"MCP server {server.name!r}: tool {tool.name!r} cannot be offered as "
            f"{made.qualified!r} (letters, digits, '_' and '-', 64 at most)"
        )
    return made


def offered(tools: Iterable[McpTool], builtin: Iterable[str]) -> dict[str, McpTool]:
    """Return the tools by the name the model calls; McpConfigError on a clash."""
    found: dict[str, McpTool] = {}
    taken = set(builtin)
    for tool in tools:
        if tool.qualified in found or tool.qualified in taken:
            raise McpConfigError(f"two tools would be offered as {tool.qualified!r}")
        found[tool.qualified] = tool
    return found


def check_args(tool: McpTool, args: Any) -> None:
    """Raise ToolError when ``args`` do not fit the tool's input schema."""
    try:
        validator = jsonschema.validators.validator_for(tool.input_schema)
        error = jsonschema.exceptions.best_match(
            validator(tool.input_schema).iter_errors(args)
        )
    except jsonschema.exceptions.SchemaError as err:
        raise ToolError(f"{tool.qualified}: the server's schema is invalid") from err
    if error is not None:
        where = "/".join(map(str, error.absolute_path))
        at = f" at {where}" if where else ""
        raise ToolError(f"{tool.qualified} arguments{at}: {error.message}")


def approval_ask(tool: McpTool, args: Mapping[str, Any]) -> ApprovalAsk | None:
    """Return the question put to the operator before the call, or None when the
    tool is annotated read-only and runs freely."""
    if tool.read_only:
        return None
    why = "annotated destructive" if tool.destructive else "not annotated read-only"
    reason = f"the MCP tool {tool.name!r} of server {tool.server.name!r} is {why}"
    return ApprovalAsk(tool.qualified, tool.shown(args), dict(args), reason)


def call_http(tool: McpTool, args: Mapping[str, Any], timeout_s: float) -> str:
    """Call a streamable HTTP server's tool; return its result as text."""
    result = mcp_http.call_tool(tool.server.url, tool.name, args, timeout_s=timeout_s)
    return mcp_wire.text_of(result)
