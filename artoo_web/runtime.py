"""What handlers need around a role call: the model, the clock, usage, cancel."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import uuid
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from artoo_web import redisconn, runfeed, telemetry, topics
from artoo_web.models import Run, TraceEvent
from roles.ggs import control
from roles.llm import client as llm
from roles.llm.offline import OfflineModel
from roles.tools import web
from roles.tools.errors import ToolError
from roles.tools.mcp import McpConfigError, McpServer, McpTool, discover
from roles.tools.sandbox import (
    Limits,
    Sandbox,
    SandboxPolicy,
    give_to_sandbox,
    remove_tree,
)
from roles.tools.sandbox_check import self_check
from roles.tools.shell import run_shell

CANCEL_CHECK_EVERY_S = 0.2
log = logging.getLogger(__name__)


def llm_configured() -> bool:
    """Return True when an LLM endpoint is configured (else the offline model)."""
    return llm.is_configured(os.environ)


def model_for(role: str, run: Run, cancelled: Callable[[], bool] | None = None):
    """Return the LLM client for ``role``, or the offline model; a warming
    strategy sets the temperature of the run's round (``control.temperature``)."""
    if not llm_configured():
        return OfflineModel(latency_ms=settings.ARTOO_OFFLINE_LATENCY_MS)
    tuned = llm.load_settings(os.environ)
    warm = control.temperature(run.control, role, run.round)
    if warm is not None:
        tuned = dataclasses.replace(tuned, temperature=warm)
    client = llm.client_for(
        role,
        os.environ,
        run_id=str(run.id),
        cancelled=cancelled or canceller(run.id),
        settings=tuned,
    )
    return telemetry.watch_model(client, run.id, role)


def canceller(run_id) -> Callable[[], bool]:
    """Return a cheap check of the run's cancel flag (Redis, rate-limited)."""
    key = topics.cancel_key(run_id)
    last = {"at": 0.0, "value": False}

    def cancelled() -> bool:
        now = time.monotonic()
        if not last["value"] and now - last["at"] >= CANCEL_CHECK_EVERY_S:
            last["at"] = now
            try:
                last["value"] = bool(redisconn.client().exists(key))
            except Exception:
                last["value"] = Run.objects.filter(
                    id=run_id, status="cancelled"
                ).exists()
        return last["value"]

    return cancelled


def today() -> date:
    return timezone.now().date()


def new_id() -> str:
    return str(uuid.uuid4())


def workspace_for(run: Run) -> Path:
    """Return (creating) the run's workspace: ``<workspace>/<owner id>/<run id>``.

    A project's task works in the project's directory instead.
    """
    if run.project_id is not None:
        return Path(run.project.directory)
    path = user_area(run.owner_id) / str(run.id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def user_area(owner_id) -> Path:
    """Return (creating) the directory that holds one user's workspaces."""
    path = settings.WORKSPACE / f"user-{owner_id}"
    path.mkdir(mode=0o711, parents=True, exist_ok=True)
    return path


def shared_area(owner_id) -> Path | None:
    """Return the user's shared area when the operator allows one, else None."""
    if not settings.ARTOO_USER_SHARED:
        return None
    path = user_area(owner_id) / "shared"
    path.mkdir(exist_ok=True)
    if settings.ARTOO_SANDBOX == "on":
        give_to_sandbox(path, sandbox_policy())
    return path


def hidden_paths() -> list[Path]:
    """Return what no run may see: the app's data, its checkout, all workspaces."""
    paths = [
        settings.DATA_DIR,
        settings.BASE_DIR,
        settings.WORKSPACE,
        settings.SANDBOX_DIR,
        Path(settings.MEMORY_PATH).resolve(),
    ]
    database = settings.DATABASES["default"].get("NAME")
    if isinstance(database, Path) or (
        isinstance(database, str) and database.startswith("/")
    ):
        paths.append(Path(database).resolve().parent)
    return sorted(set(paths))


def sandbox_policy() -> SandboxPolicy:
    """Return the sandbox policy of this installation, from settings."""
    return SandboxPolicy(
        state_dir=settings.SANDBOX_DIR,
        masks=tuple(hidden_paths()),
        uid=settings.ARTOO_SANDBOX_UID,
        network=settings.ARTOO_SANDBOX_NETWORK,
        limits=Limits(
            cpu_s=settings.ARTOO_SANDBOX_CPU_S,
            memory_mb=settings.ARTOO_SANDBOX_MEMORY_MB,
            processes=settings.ARTOO_SANDBOX_PROCESSES,
            file_mb=settings.ARTOO_SANDBOX_FILE_MB,
            quota_mb=settings.ARTOO_SANDBOX_QUOTA_MB,
            run_quota_mb=settings.ARTOO_SANDBOX_RUN_QUOTA_MB,
            quota_files=settings.ARTOO_SANDBOX_QUOTA_FILES,
            apparent_mb=settings.ARTOO_SANDBOX_APPARENT_MB,
            min_free_mb=settings.ARTOO_SANDBOX_MIN_FREE_MB,
        ),
        env_names=tuple(settings.ARTOO_SANDBOX_ENV),
    )


_web = {"checked": -1e9, "reachable": True}
WEB_CHECK_EVERY_S = 600


def unavailable_tools() -> list[str]:
    """Return the tools that cannot work here: the web ones when it is out of reach.

    Checked at most every ten minutes per process.
    """
    now = time.monotonic()
    if now - _web["checked"] > WEB_CHECK_EVERY_S:
        serper = bool(os.environ.get("SERPER_API_KEY"))
        _web["reachable"] = web.is_reachable(web.SERPER_URL if serper else web.DDG_URL)
        _web["checked"] = now
        if not _web["reachable"]:
            log.info("the web is out of reach: search and fetch_url are not offered")
    return [] if _web["reachable"] else list(web.WEB_TOOLS)


def discard_sandbox_state(run_id) -> None:
    """Remove a finished run's sandbox scratch (its /tmp and any leftovers)."""
    remove_tree(settings.SANDBOX_DIR / str(run_id))


_sandbox_checks: dict[SandboxPolicy, str | None] = {}


def sandbox_problem(policy: SandboxPolicy) -> str | None:
    """Return why sandboxes do not work here (checked once per process), or None."""
    if policy not in _sandbox_checks:
        policy.state_dir.mkdir(parents=True, exist_ok=True)
        _sandbox_checks[policy] = self_check(policy)
        if _sandbox_checks[policy]:
            log.error("sandbox unavailable: %s", _sandbox_checks[policy])
    return _sandbox_checks[policy]


def sandbox_for(run: Run, workspace: Path) -> tuple[Sandbox | None, str]:
    """Return the run's Sandbox, or (None, why) when shell commands are refused.

    With ``ARTOO_SANDBOX=off`` it returns (None, "") and commands run unconfined.
    """
    if settings.ARTOO_SANDBOX == "off":
        return None, ""
    policy = sandbox_policy()
    problem = sandbox_problem(policy)
    if problem:
        return None, problem
    writable = [*settings.ARTOO_ALLOWED_PATHS]
    shared = shared_area(run.owner_id)
    if shared is not None:
        writable.append(shared)
    # A project's directory stays its owner's: its files may be anyone's (a
    # repository the user brought), and commands edit them as its owner would.
    sandbox = Sandbox(
        policy,
        run_key=str(run.id),
        workspace=workspace,
        writable=writable,
        own_workspace=run.project_id is None,
    )
    return sandbox, ""


_mcp_tools: dict[McpServer, tuple[McpTool, ...]] = {}
_mcp_failed: dict[McpServer, float] = {}
MCP_RETRY_S = 300


def mcp_tools(sandbox: Sandbox | None, workspace: Path) -> tuple[McpTool, ...]:
    """Return the configured MCP servers' tools, listed once per process.

    A server is listed in the run's sandbox, its effect discarded (unconfined
    with ``ARTOO_SANDBOX=off``); one that fails is logged, offers nothing,
    and is asked again after ``MCP_RETRY_S``.
    """
    tools: list[McpTool] = []
    for server in settings.ARTOO_MCP_SERVERS:
        failed = _mcp_failed.get(server)
        if failed is not None and time.monotonic() - failed < MCP_RETRY_S:
            continue
        if server not in _mcp_tools:
            try:
                if sandbox is not None:
                    check_visible(server)
                runner = _runner(server, sandbox, workspace)
                timeout_s = settings.ARTOO_SHELL_TIMEOUT_S
                _mcp_tools[server] = discover(server, runner, timeout_s)
            except (McpConfigError, ToolError) as err:
                log.error("MCP server %s: %s", server.name, err)
                _mcp_failed[server] = time.monotonic()
                continue
        tools.extend(_mcp_tools[server])
    return tuple(tools)


def run_mcp_tools(run: Run) -> tuple[McpTool, ...]:
    """Return the MCP tools the run's Executor is offered: none without servers
    or when its sandbox is broken."""
    if not settings.ARTOO_MCP_SERVERS:
        return ()
    workspace = workspace_for(run)
    sandbox, problem = sandbox_for(run, workspace)
    return () if problem else mcp_tools(sandbox, workspace)


def check_visible(server: McpServer) -> None:
    """Raise McpConfigError when a stdio server's program or a path it is shown
    lies where the sandbox hides everything (the checkout, the data dir), or
    when its program, its links followed, is where no sandbox shows it (a
    virtualenv's ``python`` is a link to the interpreter it was made from)."""
    named = [Path(p) for p in (*server.paths, *server.command[:2]) if str(p)[:1] == "/"]
    for path in named:
        for hidden in hidden_paths():
            if path.is_relative_to(hidden):
                raise McpConfigError(
                    f"{path} is inside {hidden}, which the sandbox hides from "
                    "commands: install the server elsewhere (e.g. under /opt)"
                )
    program = server.command[0] if server.command else ""
    if program[:1] != "/":
        return
    real = Path(os.path.realpath(program))
    shown = (
        *sandbox_policy().system_paths,
        *server.paths,
        *settings.ARTOO_ALLOWED_PATHS,
    )
    if not any(real.is_relative_to(Path(p)) for p in shown):
        raise McpConfigError(
            f"{program} is {real} once its links are followed, which the sandbox "
            f'does not show: name {real.parent.parent} in the server\'s "paths", '
            "or make the server's virtualenv from an interpreter under /usr or /opt"
        )


def _runner(server: McpServer, sandbox: Sandbox | None, workspace: Path):
    """Return how discovery runs a command: in the sandbox, its effect discarded."""
    options = {
        "timeout_s": settings.ARTOO_SHELL_TIMEOUT_S,
        "output_cap": 4_000_000,
        "kill_grace_s": 1.0,
    }

    def run(command: str) -> str:
        if sandbox is None:
            return run_shell(command, cwd=workspace, **options)
        done = sandbox.showing(server.paths).run(
            command, cancelled=lambda: False, track=lambda *_: None, **options
        )
        done.discard()
        return done.output

    return run


def elapsed_ms(run: Run) -> int:
    return int((timezone.now() - run.created_at).total_seconds() * 1000)


def record_usage(run: Run, role: str, usage, kind: str = "llm_call") -> None:
    """Store one TraceEvent per model call and add its tokens and cost to the run."""
    if usage is None:
        return
    tokens = 0
    cost = Decimal(0)
    for call in usage.calls:
        call_tokens = call.prompt_tokens + call.completion_tokens
        tokens += call_tokens
        cost += Decimal(str(call.cost_usd or 0))
        TraceEvent.objects.create(
            run=run,
            role=role,
            kind=kind,
            tokens=call_tokens,
            elapsed_ms=int(call.elapsed_ms),
            data={
                "model": call.model,
                "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "cached_tokens": call.cached_tokens,
                "first_token_ms": call.first_token_ms,
                "mode": call.mode,
                "cost_usd": call.cost_usd,
                "messages": [dict(m) for m in call.messages],
                "response": call.response,
            },
        )
    Run.objects.filter(id=run.id).update(
        tokens=F("tokens") + tokens, cost_usd=F("cost_usd") + cost
    )
    runfeed.changed(run.id, run.owner_id)


def trace(run: Run, role: str, kind: str, **data) -> None:
    TraceEvent.objects.create(run=run, role=role, kind=kind, data=data)
