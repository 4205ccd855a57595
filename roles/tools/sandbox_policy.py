"""What every sandbox of an installation hides, allows and limits.

``SandboxPolicy`` is built once from the settings (``artoo_web.runtime``) and
given to every ``roles.tools.sandbox.Sandbox``; ``Limits`` are one command's
resource limits and disk quotas (``roles.tools.diskquota``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
)
NOBODY = 65534
NETWORK_MODES = ("none", "egress", "host")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed command (0 means no limit)."""

    cpu_s: int = 120
    memory_mb: int = 4096
    processes: int = 512
    file_mb: int = 1024
    open_files: int = 1024
    # Disk quotas, judged when the command ends (roles.tools.diskquota).
    quota_mb: int = 1024
    run_quota_mb: int = 4096
    quota_files: int = 20000
    apparent_mb: int = 4096
    min_free_mb: int = 1024

    def as_spec(self) -> dict:
        return {
            "cpu_s": self.cpu_s,
            "memory_bytes": self.memory_mb << 20,
            "processes": self.processes,
            "file_bytes": self.file_mb << 20,
            "open_files": self.open_files,
        }


@dataclass(frozen=True)
class SandboxPolicy:
    """What every sandbox of this installation hides, allows and limits."""

    state_dir: Path
    masks: tuple[Path, ...] = ()
    uid: int = NOBODY
    # none: no network at all; egress: out through slirp4netns, never to the
    # host's loopback; host: the host's own network, every service on it.
    network: str = "none"
    limits: Limits = field(default_factory=Limits)
    env_names: tuple[str, ...] = ()
    system_paths: tuple[str, ...] = SYSTEM_PATHS

    def __post_init__(self):
        if self.network not in NETWORK_MODES:
            raise ValueError(
                f"the sandbox network must be one of {', '.join(NETWORK_MODES)}, "
                f"not {self.network!r}"
            )

    @property
    def rootless(self) -> bool:
        """Return True when the worker is not root (a user namespace is used)."""
        return os.geteuid() != 0
