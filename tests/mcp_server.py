"""A small MCP server for the tests, run as a real stdio process.

``count_lines`` only reads (annotated ``readOnlyHint``); ``delete_file``
removes a file (annotated ``destructiveHint``); ``touch_file`` creates one and
carries no annotation at all. Paths are relative to the working directory,
which the sandbox makes the run's workspace. Every call is noted in
``$TMPDIR/mcp-calls.log`` (the run's own /tmp in the sandbox), so a test sees
whether the server ran at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")


def noted(tool: str, path: str) -> None:
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "mcp-calls.log"
    with log.open("a") as file:
        file.write(f"{tool} {path}\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def count_lines(path: str) -> str:
    """Return how many lines the file at ``path`` has."""
    noted("count_lines", path)
    return f"{path} has {len(Path(path).read_text().splitlines())} lines"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_file(path: str) -> str:
    """Delete the file at ``path``."""
    noted("delete_file", path)
    Path(path).unlink()
    return f"deleted {path}"


@server.tool()
def touch_file(path: str) -> str:
    """Create an empty file at ``path``."""
    noted("touch_file", path)
    Path(path).touch()
    return f"created {path}"


if __name__ == "__main__":
    # ``server.py http PORT`` serves streamable HTTP on 127.0.0.1:PORT instead.
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
