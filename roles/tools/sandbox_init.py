"""The sandbox's first process, seen from Python: its exit code and its options.

The init itself is ``sandbox_init.c``, compiled by ``make`` into the
virtualenv (``.venv/libexec/artoo-sandbox-init``): a Python interpreter as the
first process cost ~30 ms per command. ``roles.tools.sandbox`` runs it under
``unshare`` with the options ``init_args`` spells from a command's spec; it
builds the filesystem, drops to the sandbox uid, installs the seccomp filter
and execs the command. Any failure before the exec prints
``artoo-sandbox-error: <step>: <why>`` on stderr and exits with ``ERROR_EXIT``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ERROR_EXIT = 125
ERROR_PREFIX = "artoo-sandbox-error: "
# Built into the virtualenv by make; ARTOO_SANDBOX_INIT names another build.
BUILT_INIT = Path(sys.prefix) / "libexec" / "artoo-sandbox-init"
# The init's option for each resource limit of a spec (others are not rlimits).
LIMIT_OPTIONS = {
    "cpu_s": "cpu",
    "memory_bytes": "as",
    "processes": "nproc",
    "file_bytes": "fsize",
    "open_files": "nofile",
}


def find_init() -> tuple[str, str | None]:
    """Return the init's path and why it cannot run (None when it can).

    The path is ARTOO_SANDBOX_INIT's when set, else make's build in the virtualenv.
    """
    path = os.environ.get("ARTOO_SANDBOX_INIT") or str(BUILT_INIT)
    if os.access(path, os.X_OK):
        return path, None
    return path, (
        f"the sandbox init is not built ({path} is missing): run `make init` "
        "(make run and make test build it)"
    )


def init_args(spec: dict) -> list[str]:
    """Return the init's arguments for ``spec``: options, ``--``, the argv."""
    args = ["-r", spec["root"], "-t", spec["tmp"], "-c", spec["cwd"]]
    args += ["-n"] if spec["uid"] is None else ["-u", str(int(spec["uid"]))]
    for path in spec["system"]:
        args += ["-s", path]
    for name, target in spec.get("aliases", {}).items():
        args += ["-a", name, target]
    for option, layers in (("-L", spec["shared_layers"]), ("-O", spec["own_layers"])):
        for layer in layers:
            if "idmap" in layer:
                owner_uid, owner_gid, view = layer["idmap"]
                args += ["-g", str(int(owner_uid)), str(int(owner_gid)), view]
            args += [option, layer["target"], layer["lower"]]
            args += [layer["upper"], layer["work"]]
    for path in spec["masks"]:
        args += ["-m", path]
    for key, option in LIMIT_OPTIONS.items():
        if spec["limits"].get(key):
            args += ["-l", option, str(int(spec["limits"][key]))]
    for name, value in spec["env"].items():
        args += ["-e", f"{name}={value}"]
    return [*args, "--", *spec["argv"]]
