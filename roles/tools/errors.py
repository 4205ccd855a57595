"""What a tool raises instead of returning: a failure, or a wait on the operator.

The tools raise these; the tool loop (``roles.toolloop``) catches them. They
live beside the tools so that the tools need nothing from the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roles.llm.client import Usage

__all__ = ["ToolError", "ToolPaused"]


class ToolError(Exception):
    """Raised by a tool to report a failure the model should see and handle."""


class ToolPaused(Exception):  # noqa: N818 — a pause, not an error
    """Raised by a tool whose call waits on the operator's decision.

    ``pending`` is the tool layer's call as plain data; each layer the pause
    crosses puts what it needs to resume in ``state`` (by layer name), and the
    model usage spent so far in ``usage``.
    """

    def __init__(self, pending: dict | None = None):
        super().__init__("the call waits on the operator's decision")
        self.pending = pending
        self.state: dict[str, Any] = {}
        self.usage: Usage | None = None
