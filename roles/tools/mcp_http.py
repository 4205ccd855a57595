"""One MCP request to a streamable HTTP server on this machine's loopback.

The SDK's own client (``mcp.Client``) connects, negotiates the protocol,
sends the request and closes, within ``timeout_s``; each call runs its own
event loop, so a worker thread may call it. Such a server runs outside any
sandbox: what it does is the operator's server's business, and only the
question before a call not annotated read-only guards it (``roles.tools.mcp``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
from mcp_types import CallToolResult, ListToolsResult

from roles.tools.errors import ToolError


def list_tools(
    url: str, take: Callable[[ListToolsResult], str | None], *, timeout_s: float
) -> None:
    """Give ``take`` each page of the tools the server at ``url`` lists, on one
    connection, asking next with the cursor it returns until it returns None."""

    async def pages(client) -> None:
        cursor = None
        while True:
            cursor = take(await client.list_tools(cursor=cursor))
            if cursor is None:
                return

    _request(url, timeout_s, pages)


def call_tool(
    url: str, name: str, args: Mapping[str, Any], *, timeout_s: float
) -> CallToolResult:
    """Call the tool ``name`` of the server at ``url`` with ``args``."""
    return _request(url, timeout_s, lambda client: client.call_tool(name, dict(args)))


def _request(url: str, timeout_s: float, send):
    from mcp import Client  # the client stack is loaded only when a server is used

    async def go():
        with anyio.fail_after(timeout_s):
            async with Client(url, read_timeout_seconds=timeout_s) as client:
                return await send(client)

    try:
        return anyio.run(go)
    except TimeoutError:
        raise ToolError(
            f"the MCP server at {url} did not answer within {timeout_s:g} s"
        ) from None
    except Exception as err:  # noqa: BLE001 — any failure of the exchange is the server's
        raise ToolError(f"the MCP server at {url} failed: {_describe(err)}") from None


def _describe(err: BaseException) -> str:
    """Return the innermost error of an exception group, as text."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"
