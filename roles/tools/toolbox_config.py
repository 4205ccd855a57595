"""The settings of one Toolbox: where it may go, what it refuses, its limits.

A ``ToolboxConfig`` holds plain values only; the live parts a Toolbox also
takes (the operator's ``approve``, the ``cancelled`` check, the sandbox, the
memory rules) stay keyword arguments of ``Toolbox``::

    Toolbox(workspace, ToolboxConfig(shell_timeout_s=5), approve=operator)

The defaults are those of a Toolbox given no settings. A bad value (a timeout
or a cap that is not positive) is refused when the config is made, not when a
tool first runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from roles.tools import files, web
from roles.tools.mcp import McpTool

__all__ = ["ToolboxConfig"]


@dataclass(frozen=True)
class ToolboxConfig:
    """Settings of a Toolbox: reach, GGS blocks, timeouts, caps, web endpoints.

    ``allowed_paths`` are roots beside the workspace; ``hidden_paths`` are
    never shown. ``blocked_tools`` and ``blocked_targets`` are GGS's blocks;
    ``unavailable_tools`` are those this server cannot offer (not offered, not
    GGS's). ``sandbox_error`` says why the sandbox does not work here: with it
    and no sandbox, shell commands are refused. ``fetch_local`` lets
    ``fetch_url`` reach this machine's own services. ``mcp_tools`` are the
    MCP servers' tools offered beside the built-in ones (``roles.tools.mcp``).
    ``derived_targets`` are the calls a first derivation of an answer made, refused
    in its second derivation, which must get it by other means.
    ``protected_paths`` are files no write may change (a project milestone's
    tests, ``roles.projects.verification``).
    """

    allowed_paths: tuple[Path, ...] = ()
    hidden_paths: tuple[Path, ...] = ()
    protected_paths: tuple[Path, ...] = ()
    blocked_tools: frozenset[str] = frozenset()
    blocked_targets: frozenset[str] = frozenset()
    derived_targets: frozenset[str] = frozenset()
    unavailable_tools: frozenset[str] = frozenset()
    shell_timeout_s: float = 30
    kill_grace_s: float = 2.0
    output_cap: int = 1_000_000
    http_timeout_s: float = 15
    fetch_max_bytes: int = 2_000_000
    read_max_bytes: int = files.READ_LIMIT
    fetch_local: bool = False
    serper_api_key: str = ""
    search_url: str = web.DDG_URL
    serper_url: str = web.SERPER_URL
    sandbox_error: str = ""
    mcp_tools: tuple[McpTool, ...] = ()

    def __post_init__(self) -> None:
        # Callers pass lists or generators: keep immutable copies, so that the
        # config stays one value however it was made.
        self._keep("allowed_paths", tuple(Path(p) for p in self.allowed_paths))
        self._keep("hidden_paths", tuple(Path(p) for p in self.hidden_paths))
        self._keep("protected_paths", tuple(Path(p) for p in self.protected_paths))
        self._keep("blocked_tools", frozenset(self.blocked_tools))
        self._keep("unavailable_tools", frozenset(self.unavailable_tools))
        self._keep("blocked_targets", _targets(self.blocked_targets))
        self._keep("derived_targets", _targets(self.derived_targets))
        self._keep("mcp_tools", tuple(self.mcp_tools))
        for name in ("shell_timeout_s", "http_timeout_s"):
            self._require(name, getattr(self, name) > 0, "a positive number of seconds")
        self._require("kill_grace_s", self.kill_grace_s >= 0, "zero or more seconds")
        for name in ("output_cap", "fetch_max_bytes", "read_max_bytes"):
            self._require(name, getattr(self, name) > 0, "a positive number of bytes")

    def _keep(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def _require(self, name: str, ok: bool, what: str) -> None:
        if not ok:
            value = getattr(self, name)
            raise ValueError(f"ToolboxConfig.{name} must be {what}, got {value!r}")


def _targets(targets: Iterable[str]) -> frozenset[str]:
    """Return the blocked targets stripped, the empty ones dropped."""
    return frozenset(t.strip() for t in targets if t)
