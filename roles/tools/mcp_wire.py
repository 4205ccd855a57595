"""One MCP request to a stdio server, as one shell command the sandbox runs.

The command starts the server as a bash coprocess, writes the handshake and
the request (newline-delimited JSON-RPC, built with the SDK's ``mcp_types``),
echoes every line the server prints, and closes the server's stdin once the
response to the request has come, so the server ends as the protocol says a
stdio server does. What the server wrote to stderr follows a marker line::

    [exit code 0]
    {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25",…}}
    {"jsonrpc":"2.0","id":"artoo-3f…","result":{"content":[…],"isError":false}}
    [mcp stderr]

``result_of`` reads the request's result back from that text, ``render`` a
tool call's result as the model sees it (with the sandbox's ``[sandbox] …``
line when it refused the call's effect).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcp_types import (
    JSONRPC_VERSION,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    PaginatedRequestParams,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, TypeAdapter, ValidationError

from roles.tools.errors import ToolError
from roles.tools.shell import parse_shell_output

if TYPE_CHECKING:
    from roles.tools.mcp import McpServer

STDERR_MARK = "[mcp stderr]"
_MESSAGE = TypeAdapter(JSONRPCMessage)


def list_command(server: McpServer, cursor: str | None = None) -> str:
    """Return the command that asks ``server`` for its tools (``tools/list``),
    the page after ``cursor`` when one is given."""
    params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    return _command(server, "tools/list", params)


def call_command(server: McpServer, tool: str, args: Mapping[str, Any]) -> str:
    """Return the command that calls ``tool`` of ``server`` with ``args``."""
    return _command(
        server, "tools/call", CallToolRequestParams(name=tool, arguments=dict(args))
    )


def _command(server: McpServer, method: str, params: BaseModel | None) -> str:
    plain = _plain(params) if params is not None else None
    digest = hashlib.sha256(json.dumps([server.name, method, plain]).encode())
    request_id = f"artoo-{digest.hexdigest()[:20]}"
    hello = InitializeRequestParams(
        protocol_version=LATEST_HANDSHAKE_VERSION,
        capabilities=ClientCapabilities(),
        client_info=Implementation(name="artoo", version="1"),
    )
    messages = [
        JSONRPCRequest(
            jsonrpc=JSONRPC_VERSION, id=1, method="initialize", params=_plain(hello)
        ),
        JSONRPCNotification(
            jsonrpc=JSONRPC_VERSION, method="notifications/initialized"
        ),
        JSONRPCRequest(
            jsonrpc=JSONRPC_VERSION, id=request_id, method=method, params=plain
        ),
    ]
    lines = " ".join(
        shlex.quote(m.model_dump_json(exclude_none=True)) for m in messages
    )
    env = [f"{k}={v}" for k, v in server.env]
    argv = " ".join(shlex.quote(a) for a in ["env", "--", *env, *server.command])
    # A server gone early fails the write (no SIGPIPE), and its stderr is still shown.
    return "\n".join(
        [
            "trap '' PIPE",
            "err=$(mktemp)",
            f'coproc MCP {{ exec {argv} 2>"$err"; }}',
            'exec {to}>&"${MCP[1]}" {from}<&"${MCP[0]}"',
            'eval "exec ${MCP[1]}>&- ${MCP[0]}<&-"',
            "pid=$MCP_PID",
            f"printf '%s\\n' {lines} >&\"$to\"",
            'while IFS= read -r line <&"$from"; do',
            "  printf '%s\\n' \"$line\"",
            f"  case $line in *{request_id}*) exec {{to}}>&-;; esac",
            "done",
            'wait "$pid"; code=$?',
            f"printf '%s\\n' {shlex.quote(STDERR_MARK)}",
            'cat "$err"; rm -f "$err"; exit "$code"',
        ]
    )


def _plain(params: BaseModel) -> dict:
    return params.model_dump(by_alias=True, mode="json", exclude_none=True)


def result_of(output: str) -> dict:
    """Return the result the server sent for the request; ToolError if none came."""
    code, text = parse_shell_output(output)
    lines, _, stderr = text.partition(f"{STDERR_MARK}\n")
    for line in lines.splitlines():
        try:
            message = _MESSAGE.validate_json(line)
        except ValidationError:
            continue
        if not str(message.id if hasattr(message, "id") else "").startswith("artoo-"):
            continue
        if isinstance(message, JSONRPCResponse):
            return message.result
        if isinstance(message, JSONRPCError):
            raise ToolError(f"the MCP server refused the call: {message.error.message}")
    tail = stderr.strip()[-1500:] or lines.strip()[-1500:] or "(nothing)"
    raise ToolError(
        f"the MCP server gave no answer (exit code {code}); it printed:\n{tail}"
    )


def render(output: str) -> str:
    """Return a tool call's result as text; a tool's own error is marked so."""
    try:
        result = CallToolResult.model_validate(result_of(output))
    except ValidationError as err:
        raise ToolError(
            f"the MCP server's answer is not a tool result: {err}"
        ) from None
    # The sandbox's own word (its effect refused) comes after the server's output.
    _, _, after = output.partition(f"{STDERR_MARK}\n")
    notes = [line for line in after.splitlines() if line.startswith("[sandbox] ")]
    return text_of(result, notes)


def text_of(result: CallToolResult, notes: Sequence[str] = ()) -> str:
    """Return a tool result's content as text, ``notes`` after it."""
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if text is not None else f"[{block.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    body = "\n".join([*parts, *notes])
    return f"[tool error] {body}" if result.is_error else body
