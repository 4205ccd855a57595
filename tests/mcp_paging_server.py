"""A small MCP server whose ``tools/list`` comes in pages, for the tests.

``mcp_paging_server.py TOOLS PER_PAGE`` lists ``TOOLS`` tools named
``tool_0``, ``tool_1``, … ``PER_PAGE`` a page, each page's ``nextCursor``
naming the index of the next; ``TOOLS`` of ``forever`` never sends a last
page (a hostile server). Run as a real stdio process, or with ``http PORT``
after the counts as streamable HTTP on 127.0.0.1:PORT.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOTAL = sys.argv[1] if len(sys.argv) > 1 else "5"
PER_PAGE = int(sys.argv[2]) if len(sys.argv) > 2 else 2


async def list_tools(ctx, params: types.PaginatedRequestParams | None):
    start = int(params.cursor) if params and params.cursor else 0
    end = start + PER_PAGE if TOTAL == "forever" else min(start + PER_PAGE, int(TOTAL))
    tools = [
        types.Tool(
            name=f"tool_{i}",
            description=f"Tool number {i}.",
            input_schema={"type": "object", "properties": {}},
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        for i in range(start, end)
    ]
    more = TOTAL == "forever" or end < int(TOTAL)
    return types.ListToolsResult(tools=tools, next_cursor=str(end) if more else None)


async def call_tool(ctx, params: types.CallToolRequestParams):
    return types.CallToolResult(content=[types.TextContent(text=params.name)])


server = Server("paging", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[3:4] == ["http"]:
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[4]), log_level="warning")
    else:
        anyio.run(serve_stdio)
