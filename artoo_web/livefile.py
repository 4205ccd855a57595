"""The file ``make run`` leaves in its data dir for commands run beside it.

    {"pid": 4242, "running": true,
     "env": {"SECRET_KEY": "…", "REDIS_URL": "redis://127.0.0.1:40123/0",
             "ARTOO_WEB_URL": "http://127.0.0.1:8000"}}

The launcher writes it (mode 0600, never printed) once its services start and
marks it stopped when they stop. Settings take from ``env`` what the environment
does not set, so ``manage.py`` in a second terminal uses the same key, Redis and
database as the running processes. Standard library only: it is read before
Django is configured.
"""

from __future__ import annotations

import json
import os
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path

NAME = "live.json"
# The values a second process needs to join the running instance.
KEYS = ("SECRET_KEY", "REDIS_URL", "DATABASE_URL", "ARTOO_WEB_URL")


def path(data_dir: Path) -> Path:
    return Path(data_dir) / NAME


def write(data_dir: Path, env: Mapping[str, str], pid: int) -> Path:
    """Write the live file for the processes started with ``env``; return it."""
    values = {key: env[key] for key in KEYS if env.get(key)}
    _replace(path(data_dir), {"pid": pid, "running": True, "env": values})
    return path(data_dir)


def mark_stopped(data_dir: Path) -> None:
    """Mark the live file stopped; its key and database still serve offline use."""
    data = read(data_dir)
    if data:
        _replace(path(data_dir), {**data, "running": False})


def remove(data_dir: Path) -> None:
    path(data_dir).unlink(missing_ok=True)


def read(data_dir: Path) -> dict:
    """Return the live file's content, or {} when there is none readable."""
    try:
        data = json.loads(path(data_dir).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict):
        return {}
    return data


def environ(data_dir: Path, env: Mapping[str, str] = os.environ) -> Mapping[str, str]:
    """Return ``env`` backed by the live file's values for what it does not set."""
    saved = read(data_dir).get("env", {})
    return ChainMap(dict(env), {k: str(saved[k]) for k in KEYS if saved.get(k)})


def is_running(data_dir: Path) -> bool:
    """Return True when the live file says running and its launcher is alive."""
    data = read(data_dir)
    pid = data.get("pid")
    if not data.get("running") or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        # The launcher was killed before it could mark the file stopped.
        return False
    except PermissionError:
        return True
    return True


def _replace(target: Path, data: dict) -> None:
    """Write ``data`` beside ``target`` (0600 from the start), then rename it."""
    temp = target.with_name(target.name + ".tmp")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(temp, target)
