"""The executor's tools behind one gate: GGS blocks, confinement and Law 1.

``Toolbox.call(name, args)`` refuses blocked tools and blocked targets, runs the
tool, appends the canonical evidence entry (``roles.claims.evidence.format_evidence``)
to ``evidence`` and returns the output head+tail truncated for the model.
Refusals and tool failures raise ToolError, which the tool loop shows the model
as ``ERROR: …``; a Law 1 denial is a normal result, ``[LAW1] <reason> — denied
by the operator``.

Law 1 judges a shell command by its effect: with a Sandbox, the command runs
against a copy-on-write view of its writable paths, and what it deleted,
truncated, overwrote or re-permissioned of files that existed before is put to
the operator (the exact list) before it reaches the real files; created files
are applied at once. Without a sandbox (``ARTOO_SANDBOX=off``) the syntactic
gate of ``roles.safety`` asks before the command runs. ``write_file`` or
``apply_edit`` onto an existing file asks before writing either way, with the
diff (``roles.tools.edits``).

A command parked on the operator (``approve`` raised ToolPaused) is not run
again: given the answer (``settle``), the re-made call settles its effect.

MCP servers' tools (``config.mcp_tools``, ``roles.tools.mcp``) pass the same
GGS and memory checks; one not annotated read-only is put to the operator
before it runs, then each runs in the sandbox and its effect is judged as a
command's.

The tool specs and the refusals are in ``roles.tools.specs``, Law 1's questions
to the operator in ``roles.tools.law1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from roles.claims.evidence import (
    READ_TOOLS,
    WRITE_TOOLS,
    first_target,
    format_evidence,
)
from roles.llm.client import ToolSpec
from roles.tools import web
from roles.tools.access import for_policy
from roles.tools.edits import Writes
from roles.tools.errors import ToolError, ToolPaused
from roles.tools.filetools import FileTools
from roles.tools.law1 import ApprovalAsk, Law1
from roles.tools.leftovers import Spoiled
from roles.tools.mcp import McpTool, approval_ask, call_http, check_args, offered
from roles.tools.mcp_wire import call_command, render
from roles.tools.memory_gate import MemoryGate, MemoryRules
from roles.tools.own_files import Made
from roles.tools.records import MODEL_OUTPUT_LIMIT, ToolRecord, head_tail
from roles.tools.sandbox import Sandbox
from roles.tools.shell import Running, run_shell
from roles.tools.specs import TOOL_SPECS, refuse
from roles.tools.toolbox_config import ToolboxConfig

__all__ = [
    "ApprovalAsk",
    "MODEL_OUTPUT_LIMIT",
    "TOOL_SPECS",
    "ToolRecord",
    "Toolbox",
    "ToolboxConfig",
    "head_tail",
]


class Toolbox:
    """Run the executor's tools for one subtask, recording evidence.

    ``config`` holds the settings (``roles.tools.toolbox_config``); ``approve``
    is the operator Law 1 asks, ``cancelled`` says the run was stopped.
    """

    def __init__(
        self,
        workspace: Path,
        config: ToolboxConfig = ToolboxConfig(),  # noqa: B008 — frozen, shared safely
        *,
        approve: Callable[[ApprovalAsk], bool] = lambda ask: False,
        cancelled: Callable[[], bool] = lambda: False,
        sandbox: Sandbox | None = None,
        memory_rules: MemoryRules | None = None,
    ):
        self.workspace = Path(workspace).expanduser().resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"workspace {self.workspace} is not a directory")
        self.config = config
        extra = tuple(p.expanduser().resolve() for p in config.allowed_paths)
        self.roots = (self.workspace, *extra)
        self.hidden = tuple(p.resolve() for p in config.hidden_paths)
        self.sandbox = sandbox
        self.blocked_tools = config.blocked_tools
        self.approve = approve
        self.cancelled = cancelled
        # One switch lets a run reach this machine's services: the sandbox's
        # network mode "host" opens them to fetch_url as well as to commands.
        self.fetch_local = config.fetch_local or bool(
            sandbox and sandbox.policy.network == "host"
        )
        # The file tools run in the worker: they get the sandbox uid's rights.
        self.files = FileTools(
            self.workspace,
            self.roots,
            self.hidden,
            for_policy(sandbox and sandbox.policy, self.roots),
            tuple(p.expanduser().resolve() for p in config.protected_paths),
        )
        self.memory = MemoryGate(memory_rules, approve, self.is_cancelled)
        self.mcp = offered(config.mcp_tools, TOOL_SPECS)
        self.spoiled = Spoiled(self.workspace)
        self.evidence: list[str] = []
        self.records: list[ToolRecord] = []
        self._settled: tuple[dict, bool] | None = None
        self._running = Running()
        self._law1 = Law1(
            workspace=self.workspace,
            roots=self.roots,
            hidden=self.hidden,
            approve=approve,
            is_cancelled=self.is_cancelled,
            resolve=self.files.path,
        )
        self.writes = Writes(self.files, self._law1, self.spoiled)

    @property
    def made(self) -> Made:
        """Return the marks of the files the run wrote (Law 1 asks not)."""
        return self._law1.made

    def specs(self) -> list[ToolSpec]:
        """Return the spec of every tool that is neither blocked nor unavailable."""
        off = self.blocked_tools | self.config.unavailable_tools
        specs = [s for n, s in TOOL_SPECS.items() if n not in off]
        return specs + [t.spec() for n, t in self.mcp.items() if n not in off]

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        """Run one tool call and return its output as the model should see it."""
        args = dict(args) if isinstance(args, Mapping) else args
        settled = self._settled and self._settled[0]
        if settled and (settled["tool"], settled["args"]) == (name, args):
            return self._settled_call(name, args)
        try:
            if name in self.config.unavailable_tools:
                raise ToolError(f"tool {name!r} is not available on this server")
            try:
                blocked = self.config.blocked_targets
                refuse(name, args, self.blocked_tools, blocked, self.mcp)
                derived = self.config.derived_targets
                if isinstance(args, dict) and first_target(args) in derived:
                    raise ToolError(
                        f"{first_target(args)!r} gave the first derivation of this "
                        "answer: derive it again by other means (another program "
                        "or tool)"
                    )
            except ToolError as err:
                raise ToolError(f"{err}{self.files.elsewhere(name, args)}") from None
            self.memory.check(name, args)
            self.files.check(name, args)
            if name in (*READ_TOOLS, "apply_edit"):
                spoiled = self.spoiled.refused_read(self.files.path(args["path"]))
                if spoiled:
                    raise ToolError(spoiled)
            if name in self.mcp:
                output = self._mcp(self.mcp[name], args)
            elif name == "shell" and (self.sandbox or self.config.sandbox_error):
                output = self._sandboxed_shell(args)
            elif name in WRITE_TOOLS:
                output = self.writes.call(name, args)
            else:
                output = self._law1.gate(name, args)
                if output is None:
                    output = self._run(name, args)
            if name == "shell":
                offered = {
                    s.name: s.parameters.get("required", ()) for s in self.specs()
                }
                output = self.files.hinted(output, args.get("command", ""), offered)
        except ToolError as err:
            self._record(name, args, f"ERROR: {err}", error=True)
            raise
        self._record(name, args, output)
        return head_tail(output)

    def settle(self, pending: dict, approved: bool) -> None:
        """Take the answer to a parked command's effect, applied when it is re-made."""
        self._settled = (pending, approved)

    def _settled_call(self, name: str, args: dict) -> str:
        (pending, approved), self._settled = self._settled, None
        try:
            output = self._law1.settle_effect(pending, approved)
        except ToolError as err:
            self._record(name, args, f"ERROR: {err}", error=True)
            raise
        self._record(name, args, output)
        return head_tail(output)

    def kill(self) -> None:
        """Kill every running process group now and refuse further shell calls."""
        self._running.kill()

    def is_cancelled(self) -> bool:
        """Return True once the run is cancelled or the toolbox was killed."""
        return self._running.killed or bool(self.cancelled())

    def _run(self, name: str, args: dict) -> str:
        config = self.config
        if name == "shell":
            return self._shell(args["command"])
        if name == "glob":
            return self.files.glob(args)
        if name == "read_file":
            return self.files.read(args, config.read_max_bytes)
        if name == "read_file_lines":
            return self.files.read_lines(args)
        return web.call(name, args, config, local_ok=self.fetch_local)

    def _shell(self, command: str) -> str:
        if self.is_cancelled():
            raise ToolError("cancelled: the run was stopped, no command runs")
        output = run_shell(
            command,
            cwd=self.workspace,
            timeout_s=self.config.shell_timeout_s,
            output_cap=self.config.output_cap,
            cancelled=self.is_cancelled,
            track=self._running.track,
            kill_grace_s=self.config.kill_grace_s,
        )
        if self._running.killed:
            raise ToolError("command cancelled; its process group was killed")
        return output

    def _mcp(self, tool: McpTool, args: dict) -> str:
        """Run an MCP tool call: asked first unless read-only, then as a command."""
        check_args(tool, args)
        ask = approval_ask(tool, args)
        denied = ask and self._law1.ask_first(ask)
        if denied:
            return denied
        if tool.server.url:  # a server on the loopback, outside any sandbox
            return call_http(tool, args, self.config.shell_timeout_s)
        if self.sandbox or self.config.sandbox_error:
            return self._sandboxed_shell(args, tool)
        return render(self._shell(call_command(tool.server, tool.name, args)))

    def _sandboxed_shell(self, args: dict, tool: McpTool | None = None) -> str:
        if self.sandbox is None:
            raise ToolError(
                f"shell commands are refused: the sandbox does not work here "
                f"({self.config.sandbox_error}); an operator may set ARTOO_SANDBOX=off "
                "to run them unconfined for a single trusted user"
            )
        if self.is_cancelled():
            raise ToolError("cancelled: the run was stopped, no command runs")
        command, sandbox = args.get("command"), self.sandbox
        if tool is not None:
            command = call_command(tool.server, tool.name, args)
            sandbox = sandbox.showing(tool.server.paths)
        config = self.config
        done = sandbox.run(
            command,
            timeout_s=config.shell_timeout_s,
            output_cap=config.output_cap,
            cancelled=self.is_cancelled,
            track=self._running.track,
            kill_grace_s=config.kill_grace_s,
        )
        try:
            if self._running.killed:
                raise ToolError("command cancelled; its process group was killed")
            if tool is not None:
                done.output, command = render(done.output), tool.shown(args)
            name = tool.qualified if tool else "shell"
            # Nothing of an effect that touched a protected file is applied.
            self.files.check_protected(c.path for c in done.effect.changes)
            output = self._law1.judge(command, args, done, name)
            if output.startswith("[LAW1]"):
                return output  # denied: nothing was changed
            changed = [c.path for c in done.effect.changes]
            spoiled = self.spoiled.refused(command, changed, output)
            self.spoiled.record(command, done.effect, output)
            if spoiled:
                raise ToolError(spoiled)
            return output
        except ToolPaused:
            done = None  # its scratch holds the effect the operator will judge
            raise
        finally:
            if done is not None:
                done.discard()

    def _record(self, name: str, args: Any, output: str, *, error: bool = False):
        safe_args = args if isinstance(args, dict) else {"args": args}
        tool = name if isinstance(name, str) and name else "unknown"
        try:
            entry = format_evidence(tool, safe_args, output)
        except ValueError:
            entry = format_evidence("unknown", {"tool": str(name), **safe_args}, output)
        self.evidence.append(entry)
        self.records.append(ToolRecord(tool, safe_args, output, error))
