"""The executor's tools behind one gate: GGS blocks, confinement and Law 1.

``Toolbox.call(name, args)`` refuses blocked tools and blocked targets, runs the
tool, appends the canonical evidence entry (``roles.evidence.format_evidence``)
to ``evidence`` and returns the output head+tail truncated for the model.
Refusals and tool failures raise ToolError, which the tool loop shows the model
as ``ERROR: …``; a Law 1 denial is a normal result, ``[LAW1] <reason> — denied
by the operator``.

Law 1 judges a shell command by its effect: with a Sandbox, the command runs
against a copy-on-write view of its writable paths, and what it deleted,
truncated, overwrote or re-permissioned of files that existed before is put to
the operator (the exact list) before it reaches the real files; created files
are applied at once. Without a sandbox (``ARTOO_SANDBOX=off``) the syntactic
gate of ``roles.safety`` asks before the command runs. ``write_file`` onto an
existing file asks before writing either way.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roles.evidence import format_evidence
from roles.llm import ToolSpec
from roles.safety import check_shell, check_write
from roles.toolloop import ToolError
from roles.tools import files, web
from roles.tools.effect import EffectConflict, apply_effect
from roles.tools.sandbox import Sandbox, SandboxRun, give_to_sandbox
from roles.tools.shell import kill_group, parse_shell_output, run_shell

__all__ = [
    "ApprovalAsk",
    "MODEL_OUTPUT_LIMIT",
    "TOOL_SPECS",
    "ToolRecord",
    "Toolbox",
    "head_tail",
]

MODEL_OUTPUT_LIMIT = 4000
TARGET_KEYS = ("query", "command", "path", "url")


def _spec(
    name: str, description: str, optional: tuple[str, ...] = (), **props: str
) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {
            k: {"type": "string", "description": v} for k, v in props.items()
        },
        "required": [k for k in props if k not in optional],
    }
    return ToolSpec(name, description, schema)


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            "shell",
            "Run a bash command in the workspace; the result starts with "
            "'[exit code N]' followed by stdout and stderr.",
            command="The bash command line.",
        ),
        _spec(
            "glob",
            "List files matching a pattern ('**' recurses), e.g. '**/*.py'.",
            ("root",),
            pattern="Glob pattern relative to root.",
            root="Directory to search (default: the workspace).",
        ),
        _spec("read_file", "Return a text file's contents.", path="File path."),
        _spec(
            "write_file",
            "Write text to a file (relative paths go into the workspace; parent "
            "directories are created).",
            path="File path.",
            content="The full text to write.",
        ),
        _spec(
            "search",
            "Search the web; returns titles, snippets and URLs.",
            query="The search query.",
        ),
        _spec("fetch_url", "Fetch an http(s) page as text.", url="The URL."),
    )
}


@dataclass(frozen=True)
class ApprovalAsk:
    """A Law 1 gated call put to the operator: what would run and why it is gated."""

    tool: str
    command: str
    args: dict
    reason: str
    changes: tuple[dict, ...] = ()


@dataclass(frozen=True)
class ToolRecord:
    """One call as made: its arguments and full (capped) output."""

    name: str
    args: Mapping[str, Any]
    output: str
    error: bool = False


def head_tail(text: str, limit: int = MODEL_OUTPUT_LIMIT) -> str:
    """Return ``text`` cut to ``limit`` chars: the first third and the end."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return (
        text[:head]
        + "\n...[middle truncated]...\n"
        + text[len(text) - (limit - head) :]
    )


@dataclass
class _Limits:
    shell_timeout_s: float = 30
    output_cap: int = 1_000_000
    http_timeout_s: float = 15
    fetch_max_bytes: int = 2_000_000
    read_max_bytes: int = files.READ_LIMIT
    kill_grace_s: float = 2.0


@dataclass
class _Running:
    procs: set = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    killed: bool = False


class Toolbox:
    """Run the executor's tools for one subtask, recording evidence."""

    def __init__(
        self,
        workspace: Path,
        *,
        allowed_paths: Sequence[Path] = (),
        blocked_tools: Iterable[str] = (),
        blocked_targets: Iterable[str] = (),
        approve: Callable[[ApprovalAsk], bool] = lambda ask: False,
        cancelled: Callable[[], bool] = lambda: False,
        shell_timeout_s: float = 30,
        output_cap: int = 1_000_000,
        http_timeout_s: float = 15,
        serper_api_key: str = "",
        fetch_max_bytes: int = 2_000_000,
        search_url: str = web.DDG_URL,
        serper_url: str = web.SERPER_URL,
        kill_grace_s: float = 2.0,
        sandbox: Sandbox | None = None,
        sandbox_error: str = "",
        hidden_paths: Sequence[Path] = (),
    ):
        self.workspace = Path(workspace).expanduser().resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"workspace {self.workspace} is not a directory")
        extra = tuple(Path(p).expanduser().resolve() for p in allowed_paths)
        self.roots = (self.workspace, *extra)
        self.hidden = tuple(Path(p).resolve() for p in hidden_paths)
        self.sandbox = sandbox
        self.sandbox_error = sandbox_error
        self.blocked_tools = frozenset(blocked_tools)
        self.blocked_targets = frozenset(t.strip() for t in blocked_targets if t)
        self.approve = approve
        self.cancelled = cancelled
        self.serper_api_key = serper_api_key
        self.search_url, self.serper_url = search_url, serper_url
        self.limits = _Limits(
            shell_timeout_s,
            output_cap,
            http_timeout_s,
            fetch_max_bytes,
            kill_grace_s=kill_grace_s,
        )
        self.evidence: list[str] = []
        self.records: list[ToolRecord] = []
        self._running = _Running()

    def specs(self) -> list[ToolSpec]:
        """Return the spec of every tool that is not blocked."""
        return [s for n, s in TOOL_SPECS.items() if n not in self.blocked_tools]

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        """Run one tool call and return its output as the model should see it."""
        args = dict(args) if isinstance(args, Mapping) else args
        try:
            self._refuse(name, args)
            if name == "shell" and (self.sandbox or self.sandbox_error):
                output = self._sandboxed_shell(args)
            else:
                output = self._gate(name, args)
                if output is None:
                    output = self._run(name, args)
        except ToolError as err:
            self._record(name, args, f"ERROR: {err}", error=True)
            raise
        self._record(name, args, output)
        return head_tail(output)

    def kill(self) -> None:
        """Kill every running process group now and refuse further shell calls."""
        with self._running.lock:
            self._running.killed = True
            procs = list(self._running.procs)
        for proc in procs:
            kill_group(proc, grace_s=0)

    def is_cancelled(self) -> bool:
        """Return True once the run is cancelled or the toolbox was killed."""
        return self._running.killed or bool(self.cancelled())

    def _refuse(self, name: str, args: Any) -> None:
        if name not in TOOL_SPECS:
            raise ToolError(
                f"unknown tool {name!r}; available: {', '.join(TOOL_SPECS)}"
            )
        if name in self.blocked_tools:
            raise ToolError(
                f"blocked by GGS: tool {name!r} failed in an earlier round "
                "— choose another approach"
            )
        if not isinstance(args, dict):
            raise ToolError(f"{name} arguments must be a JSON object")
        schema = TOOL_SPECS[name].parameters
        for key in schema["required"]:
            if not isinstance(args.get(key), str):
                raise ToolError(f"{name} needs a string argument {key!r}")
        for key in TARGET_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip() in self.blocked_targets:
                raise ToolError(
                    f"blocked by GGS: {key} {value.strip()!r} failed in an earlier "
                    "round — choose another approach"
                )

    def _gate(self, name: str, args: dict) -> str | None:
        """Return the Law 1 denial text, or None when the call may run."""
        if name == "shell":
            command = args["command"]
            reason = check_shell(command, cwd=str(self.workspace))
        elif name == "write_file":
            path = self._path(args["path"])
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

    def _run(self, name: str, args: dict) -> str:
        limits = self.limits
        if name == "shell":
            return self._shell(args["command"])
        if name == "glob":
            root = args.get("root") or "."
            if not isinstance(root, str):
                raise ToolError("glob root must be a string")
            self._path(root)
            return files.glob_files(
                args["pattern"],
                root,
                workspace=self.workspace,
                roots=self.roots,
                hidden=self.hidden,
            )
        if name == "read_file":
            path = self._path(args["path"])
            return files.read_text(path, limit=limits.read_max_bytes)
        if name == "write_file":
            return self._write(self._path(args["path"]), args["content"])
        if name == "search":
            return web.search(
                args["query"],
                timeout_s=limits.http_timeout_s,
                serper_api_key=self.serper_api_key,
                ddg_url=self.search_url,
                serper_url=self.serper_url,
            )
        return web.fetch_url(
            args["url"],
            timeout_s=limits.http_timeout_s,
            max_bytes=limits.fetch_max_bytes,
        )

    def _shell(self, command: str) -> str:
        if self.is_cancelled():
            raise ToolError("cancelled: the run was stopped, no command runs")
        output = run_shell(
            command,
            cwd=self.workspace,
            timeout_s=self.limits.shell_timeout_s,
            output_cap=self.limits.output_cap,
            cancelled=self.is_cancelled,
            track=self._track,
            kill_grace_s=self.limits.kill_grace_s,
        )
        if self._running.killed:
            raise ToolError("command cancelled; its process group was killed")
        return output

    def _track(self, proc: subprocess.Popen, running: bool) -> None:
        with self._running.lock:
            if running:
                self._running.procs.add(proc)
            else:
                self._running.procs.discard(proc)
        if running and self._running.killed:
            kill_group(proc, grace_s=0)

    def _sandboxed_shell(self, args: dict) -> str:
        if self.sandbox is None:
            raise ToolError(
                f"shell commands are refused: the sandbox does not work here "
                f"({self.sandbox_error}); an operator may set ARTOO_SANDBOX=off "
                "to run them unconfined for a single trusted user"
            )
        if self.is_cancelled():
            raise ToolError("cancelled: the run was stopped, no command runs")
        command = args["command"]
        limits = self.limits
        done = self.sandbox.run(
            command,
            timeout_s=limits.shell_timeout_s,
            output_cap=limits.output_cap,
            cancelled=self.is_cancelled,
            track=self._track,
            kill_grace_s=limits.kill_grace_s,
        )
        try:
            if self._running.killed:
                raise ToolError("command cancelled; its process group was killed")
            return self._judge(command, args, done)
        finally:
            done.discard()

    def _judge(self, command: str, args: dict, done: SandboxRun) -> str:
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
        notes = [*effect.skipped, *self._hidden_notes(command, done.output)]
        return "\n".join([done.output.rstrip("\n"), *notes]) if notes else done.output

    def _hidden_notes(self, command: str, output: str) -> list[str]:
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

    def _write(self, path: Path, content: str) -> str:
        missing = [p for p in (path, *path.parents) if not p.exists()]
        output = files.write_text(path, content)
        if self.sandbox is not None:
            for created in missing:
                give_to_sandbox(created, self.sandbox.policy)
        return output

    def _path(self, path: str) -> Path:
        resolved = files.resolve_confined(path, self.workspace, self.roots)
        for hidden in self.hidden:
            if resolved.is_relative_to(hidden) and not resolved.is_relative_to(
                self.workspace
            ):
                raise ToolError(
                    f"path {path!r} is hidden from runs (it holds the "
                    "application's own data); use a path in the workspace"
                )
        return resolved

    def _record(self, name: str, args: Any, output: str, *, error: bool = False):
        safe_args = args if isinstance(args, dict) else {"args": args}
        tool = name if isinstance(name, str) and name else "unknown"
        try:
            entry = format_evidence(tool, safe_args, output)
        except ValueError:
            entry = format_evidence("unknown", {"tool": str(name), **safe_args}, output)
        self.evidence.append(entry)
        self.records.append(ToolRecord(tool, safe_args, output, error))
