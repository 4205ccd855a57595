"""Law 1 for one toolbox: what it puts to the operator, and the answer applied.

Without a sandbox ``gate`` asks before a shell command the syntactic check of
``roles.safety`` flags, or a ``write_file`` onto an existing file. With one,
``judge`` puts a sandboxed command's destructive effect to the operator before
applying it (``roles.tools.effect``); ``hidden_notes`` says why a failed command
could not see a path the sandbox hides.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roles.safety import check_shell, check_write
from roles.toolloop import ToolError
from roles.tools.effect import EffectConflict, apply_effect
from roles.tools.sandbox import SandboxRun
from roles.tools.shell import parse_shell_output


@dataclass(frozen=True)
class ApprovalAsk:
    """A Law 1 gated call put to the operator: what would run and why it is gated."""

    tool: str
    command: str
    args: dict
    reason: str
    changes: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Law1:
    """Law 1 for one toolbox: its paths, the operator it asks, its cancel flag."""

    workspace: Path
    roots: tuple[Path, ...]
    hidden: tuple[Path, ...]
    approve: Callable[[ApprovalAsk], bool]
    is_cancelled: Callable[[], bool]
    resolve: Callable[[str], Path]

    def gate(self, name: str, args: dict) -> str | None:
        """Return the Law 1 denial text, or None when the call may run."""
        if name == "shell":
            command = args["command"]
            reason = check_shell(command, cwd=str(self.workspace))
        elif name == "write_file":
            path = self.resolve(args["path"])
            command = f"write_file {path}"
            reason = check_write(str(path))
        else:
            return None
        if reason is None:
            return None
        approved = self.approve(ApprovalAsk(name, command, dict(args), reason))
        if self.is_cancelled():
            raise ToolError("cancelled while waiting for the operator's approval")
        return None if approved is True else f"[LAW1] {reason} — denied by the operator"

    def judge(self, command: str, args: dict, done: SandboxRun) -> str:
        """Apply the command's effect, asking the operator first when destructive."""
        effect = done.effect
        destructive = effect.destructive
        if destructive:
            warning = check_shell(command, cwd=str(self.workspace))
            reason = f"the command {effect.summary()}"
            if warning:
                reason += f" ({warning})"
            changes = tuple(change.as_dict() for change in destructive)
            ask = ApprovalAsk("shell", command, dict(args), reason, changes)
            approved = self.approve(ask)
            if self.is_cancelled():
                raise ToolError("cancelled while waiting for the operator's approval")
            if approved is not True:
                return (
                    f"[LAW1] {reason} — denied by the operator; nothing was "
                    f"changed:\n{effect.describe()}\n"
                    f"[output of the discarded run]\n{done.output}"
                )
        try:
            apply_effect(effect)
        except EffectConflict as err:
            raise ToolError(str(err)) from None
        except OSError as err:
            message = f"the command's effect could not be applied: {err}"
            raise ToolError(message) from err
        notes = [*effect.skipped, *self.hidden_notes(command, done.output)]
        return "\n".join([done.output.rstrip("\n"), *notes]) if notes else done.output

    def hidden_notes(self, command: str, output: str) -> list[str]:
        """Say why a failed command could not find a path the sandbox hides."""
        code, _ = parse_shell_output(output)
        if code == 0 or not self.hidden:
            return []
        for word in command.replace("=", " ").split():
            word = word.strip("'\"();|&<>")
            if "/" not in word:
                continue
            path = Path(os.path.normpath(self.workspace / os.path.expanduser(word)))
            own = any(path.is_relative_to(root) for root in self.roots)
            if not own and any(path.is_relative_to(h) for h in self.hidden):
                return [
                    f"[sandbox] {word} is not visible to this run: the "
                    "application's data, its code and other runs' workspaces "
                    "are hidden from commands"
                ]
        return []
