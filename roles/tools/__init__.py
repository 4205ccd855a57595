"""The executor's tools: files, shell, web, the sandbox and the gate before them.

``roles.tools.toolbox`` holds the Toolbox, which runs every tool call behind GGS
blocks, path confinement and Law 1; ``roles.tools.toolbox_config`` its settings.
Its names, with ``ToolError`` and ``ToolPaused`` (``roles.tools.errors``) and
``parse_shell_output``, are re-exported here so callers import from
``roles.tools``.
"""

from roles.tools.errors import ToolError, ToolPaused
from roles.tools.shell import parse_shell_output
from roles.tools.toolbox import (
    MODEL_OUTPUT_LIMIT,
    TOOL_SPECS,
    ApprovalAsk,
    Toolbox,
    ToolRecord,
    head_tail,
)
from roles.tools.toolbox_config import ToolboxConfig

__all__ = [
    "ApprovalAsk",
    "MODEL_OUTPUT_LIMIT",
    "TOOL_SPECS",
    "ToolError",
    "ToolPaused",
    "ToolRecord",
    "Toolbox",
    "ToolboxConfig",
    "head_tail",
    "parse_shell_output",
]
