"""Law 1 for one toolbox: what it puts to the operator, and the answer applied.

Without a sandbox ``gate`` asks before a shell command the syntactic check of
``roles.safety`` flags; either way it asks before a ``write_file`` or
``apply_edit`` onto an existing file, showing the diff. With one,
``judge`` puts a sandboxed command's destructive effect to the operator before
applying it (``roles.tools.effect``); ``hidden_notes`` says why a failed command
could not see a path the sandbox hides.

A file the run wrote itself (``write_file`` onto nothing, or a command's
created file) is its own while it holds exactly what the run wrote (a content
mark, ``roles.tools.own_files``): overwriting or deleting it loses nothing that was
there before the run, so it is not put to the operator. A command that made a
fifo, socket or device has nothing of its effect applied (``refused``).

The operator's answer comes back from ``approve`` at once, or later: ``approve``
raises ToolPaused, which leaves here carrying the call as plain data
(``roles.tools.effect_pending``). A gated call is simply asked again when the
subtask resumes (``approve`` then answers); a command's effect is not run again
but settled from that data (``settle_effect``), on whichever worker resumes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from roles.claims.evidence import WRITE_TOOLS
from roles.safety import check_shell, check_write
from roles.tools.effect import EffectConflict, apply_effect
from roles.tools.effect_pending import pending_call, pending_effect, sandbox_run
from roles.tools.errors import ToolError, ToolPaused
from roles.tools.own_files import Made
from roles.tools.sandbox import SandboxRun
from roles.tools.shell import parse_shell_output

# What puts a call to the operator: Law 1 (a destructive effect, a file tool
# over an existing file, an MCP tool not annotated read-only), or memory's
# Caution on its (tool, target), which a past run left.
LAW1 = "law1"
MEMORY = "memory"


@dataclass(frozen=True)
class ApprovalAsk:
    """A gated call put to the operator: what would run, why, and which gate."""

    tool: str
    command: str
    args: dict
    reason: str
    changes: tuple[dict, ...] = ()
    gate: str = LAW1


@dataclass(frozen=True)
class Law1:
    """Law 1 for one toolbox: its paths, the operator it asks, its cancel flag."""

    workspace: Path
    roots: tuple[Path, ...]
    hidden: tuple[Path, ...]
    approve: Callable[[ApprovalAsk], bool]
    is_cancelled: Callable[[], bool]
    resolve: Callable[[str], Path]
    # The content marks of the files the run wrote (filled as it goes).
    made: Made = field(default_factory=Made)

    def gate(self, name: str, args: dict, changes: tuple[dict, ...] = ()) -> str | None:
        """Return the Law 1 denial text, or None when the call may run;
        ``changes`` (a file tool's change, with its diff) are shown when asked."""
        if name == "shell":
            command = args["command"]
            reason = check_shell(command, cwd=str(self.workspace))
        elif name in WRITE_TOOLS:
            path = self.resolve(args["path"])
            command = f"{name} {path}"
            own = self.made.is_own(str(path))
            reason = None if own else check_write(str(path), tool=name)
        else:
            return None
        if reason is None:
            return None
        ask = ApprovalAsk(name, command, dict(args), reason, changes)
        approved = self._ask(ask)
        return None if approved else f"[LAW1] {reason} — denied by the operator"

    def ask_first(self, ask: ApprovalAsk) -> str | None:
        """Put a call to the operator before it runs; return the denial, or None."""
        if self._ask(ask):
            return None
        return f"[LAW1] {ask.reason} — denied by the operator; nothing ran"

    def judge(
        self, command: str, args: dict, done: SandboxRun, tool: str = "shell"
    ) -> str:
        """Apply the command's effect, asking the operator first when destructive."""
        effect = done.effect
        if effect.refused:
            raise ToolError(refusal(effect, done.output))
        if all(self.made.is_own(change.path) for change in effect.destructive):
            return self.settle(command, done)
        shell = tool == "shell"
        warning = check_shell(command, cwd=str(self.workspace)) if shell else None
        reason = f"the {'command' if shell else tool + ' call'} {effect.summary()}"
        if warning:
            reason += f" ({warning})"
        changes = tuple(change.as_dict() for change in effect.destructive)
        ask = ApprovalAsk(tool, command, dict(args), reason, changes)
        approved = self._ask(ask, done)
        return self.settle(command, done, ask, approved)

    def settle_effect(self, pending: dict, approved: bool) -> str:
        """Apply the operator's later answer to a pending effect."""
        if self.is_cancelled():
            raise ToolError("cancelled while waiting for the operator's approval")
        ask = ApprovalAsk(**pending["ask"])
        done = sandbox_run(pending)
        try:
            return self.settle(ask.command, done, ask, approved)
        finally:
            done.discard()

    def settle(
        self,
        command: str,
        done: SandboxRun,
        ask: ApprovalAsk | None = None,
        approved: bool = True,
    ) -> str:
        """Apply a command's effect, or say what a denial left unchanged."""
        effect = done.effect
        if ask is not None and not approved:
            return (
                f"[LAW1] {ask.reason} — denied by the operator; nothing was "
                f"changed:\n{effect.describe()}\n"
                f"[output of the discarded run]\n{done.output}"
            )
        if effect.refused:
            raise ToolError(refusal(effect, done.output))
        own = self._own(effect, asked=ask is not None)
        try:
            written = apply_effect(effect)
        except EffectConflict as err:
            raise ToolError(str(err)) from None
        except OSError as err:
            message = f"the command's effect could not be applied, nothing was: {err}"
            raise ToolError(message) from err
        self._mark(effect, written, own)
        notes = [*effect.skipped, *self.hidden_notes(command, done.output)]
        return "\n".join([done.output.rstrip("\n"), *notes]) if notes else done.output

    def _own(self, effect, *, asked: bool) -> set[str]:
        """Return the changed paths that are the run's own; unasked, every
        destructive change must still be (else someone rewrote it meanwhile)."""
        own = {c.path for c in effect.changes if self.made.is_own(c.path)}
        if not asked and any(c.path not in own for c in effect.destructive):
            raise ToolError(
                "a file of the run's own changed while the command's effect "
                "waited; nothing applied"
            )
        return own

    def _mark(self, effect, written: dict, own: set[str]) -> None:
        """Mark what the run wrote: its created files and own files rewritten."""
        for change in effect.changes:
            if change.kind in ("deleted", "replaced"):
                self.made.forget(change.path)
        created = {c.path for c in effect.changes if c.kind == "created"}
        for path, mark in written.items():
            if path in created or path in own:
                self.made.wrote_file(path, mark)

    def _ask(self, ask: ApprovalAsk, done: SandboxRun | None = None) -> bool:
        """Put ``ask`` to the operator; a pause carries the call, or its effect."""
        try:
            approved = self.approve(ask)
        except ToolPaused as paused:
            paused.pending = pending_effect(ask, done) if done else pending_call(ask)
            raise
        if self.is_cancelled():
            raise ToolError("cancelled while waiting for the operator's approval")
        return approved is True

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


def refusal(effect, output: str) -> str:
    """Return why a command that made special files has no effect applied."""
    made = "; ".join(effect.refused[:5])
    return (
        f"[sandbox] the command made {made}: a fifo, socket or device is not "
        "applied to the real files, so nothing of its effect was applied\n"
        f"[output of the discarded run]\n{output}"
    )
