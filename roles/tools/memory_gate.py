"""Memory's rules enforced at the tool layer, like GGS's blocked targets.

A call on a (tool, target) pair memory says to avoid is refused with a message
naming the memory entry; a call on a Caution pair is put to the operator
through the same approval callback as Law 1, with a reason naming the entry,
and refused unless approved. The pairs come from ``roles.memory_rules``.
"""

from __future__ import annotations

from collections.abc import Callable

from roles.memory_rules import MemoryRules, pair_of
from roles.tools.errors import ToolError
from roles.tools.law1 import MEMORY, ApprovalAsk


class MemoryGate:
    """Check one toolbox's calls against memory's Avoid and Caution pairs."""

    def __init__(
        self,
        rules: MemoryRules | None,
        approve: Callable[[ApprovalAsk], bool],
        is_cancelled: Callable[[], bool],
    ):
        self.rules = rules or MemoryRules()
        self.approve = approve
        self.is_cancelled = is_cancelled

    def check(self, name: str, args: dict) -> None:
        """Raise ToolError for an avoided call or a Caution call not approved."""
        tool, target = pair_of(name, args)
        why = self.rules.avoid.get((tool, target))
        if why is not None:
            raise ToolError(
                f"avoided by memory: {name} {target!r} failed in earlier tasks "
                f"({why}) — choose another approach"
            )
        why = self.rules.caution.get((tool, target))
        if why is None:
            return
        command = args["command"] if name == "shell" else f"{name} {target}"
        approved = self.approve(
            ApprovalAsk(name, command, dict(args), why, gate=MEMORY)
        )
        if self.is_cancelled():
            raise ToolError("cancelled while waiting for the operator's approval")
        if approved is not True:
            raise ToolError(
                f"memory caution: {why} — denied by the operator; choose another "
                "approach"
            )
