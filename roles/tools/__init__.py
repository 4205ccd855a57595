"""The executor's tools: files, shell, web, the sandbox and the gate before them.

``roles.tools.toolbox`` holds the Toolbox, which runs every tool call behind GGS
blocks, path confinement and Law 1. Its names, with ``ToolError`` and
``parse_shell_output``, are re-exported here so callers import from
``roles.tools``.
"""

from roles.toolloop import ToolError
from roles.tools.shell import parse_shell_output
from roles.tools.toolbox import (
    MODEL_OUTPUT_LIMIT,
    TOOL_SPECS,
    ApprovalAsk,
    Toolbox,
    ToolRecord,
    head_tail,
)

__all__ = [
    "ApprovalAsk",
    "MODEL_OUTPUT_LIMIT",
    "TOOL_SPECS",
    "ToolError",
    "ToolRecord",
    "Toolbox",
    "head_tail",
    "parse_shell_output",
]
