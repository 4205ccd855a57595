"""Read settings from the environment; a malformed value is an ImproperlyConfigured."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from roles.tools.mcp import McpServer

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str = "", env: Mapping[str, str] = os.environ) -> str:
    """Return the variable's value, or ``default`` when it is unset."""
    return env.get(name, default)


def envbool(name: str, default: bool, env: Mapping[str, str] = os.environ) -> bool:
    """Return the variable as a boolean; anything but yes/no words is an error."""
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def envint(
    name: str,
    default: int,
    env: Mapping[str, str] = os.environ,
    *,
    minimum: int | None = None,
) -> int:
    """Return the variable as an integer of at least ``minimum``."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}")
    return value


def envlist(
    name: str, default: str = "", env: Mapping[str, str] = os.environ
) -> list[str]:
    """Return the variable split on commas, blanks dropped."""
    return [item.strip() for item in env.get(name, default).split(",") if item.strip()]


NETWORK_MODES = ("none", "egress", "host")


def envnetwork(name: str, env: Mapping[str, str] = os.environ) -> str:
    """Return the sandbox's network mode: none (unset or false), egress or host.

    The variable was once a boolean whose true meant the host's network; that
    spelling is refused rather than read as ``host``, so an installation that
    set it is told what sharing the host's network now means.
    """
    raw = env.get(name, "")
    value = raw.strip().lower()
    if value in FALSE:
        return "none"
    if value in NETWORK_MODES:
        return value
    if value in TRUE:
        raise ImproperlyConfigured(
            f"{name}={raw} no longer means the host's network: set {name}=host "
            "to let sandboxed commands reach every service of this machine "
            "(Redis, PostgreSQL, the web app), egress to let them connect out "
            "but not to this machine's loopback, or none for no network"
        )
    raise ImproperlyConfigured(f"{name} must be none, egress or host, not {raw!r}")


def envmcp(name: str, env: Mapping[str, str] = os.environ) -> tuple[McpServer, ...]:
    """Return the MCP servers the JSON file the variable names declares; none
    when it is unset (``roles.tools.mcp`` shows the format)."""
    raw = env.get(name, "").strip()
    if not raw:
        return ()
    from roles.tools.mcp import McpConfigError, parse_servers  # only when used

    try:
        with open(raw, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as err:
        raise ImproperlyConfigured(f"{name}: cannot read {raw}: {err}") from None
    except ValueError as err:
        raise ImproperlyConfigured(f"{name}: {raw} is not JSON: {err}") from None
    try:
        return parse_servers(data)
    except McpConfigError as err:
        raise ImproperlyConfigured(f"{name}: {raw}: {err}") from None
