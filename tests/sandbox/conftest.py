"""Sandboxed toolboxes over real processes, workspaces outside /tmp.

The sandbox gives each command its own /tmp, so workspaces here live under
/var/tmp, the way the app's live under its data dir.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig
from roles.tools.sandbox import NOBODY, Limits, Sandbox, SandboxPolicy, remove_tree
from tests.unit.test_tools_toolbox import Operator  # noqa: F401 (shared)

VICTIM_TEXT = "precious data\nline two\n"


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="artoo-sandbox-", dir="/var/tmp"))
    yield path
    remove_tree(path)


@pytest.fixture
def policy(base) -> SandboxPolicy:
    return SandboxPolicy(state_dir=base / "state", limits=Limits(cpu_s=30))


@pytest.fixture
def workspace(base) -> Path:
    """Return a run's workspace laid out by ``prepare``, as its run key names it."""
    path = base / "workspaces" / "run-a"
    prepare(path)
    return path


def make_toolbox(
    policy, workspace: Path, operator, cancelled=lambda: False, **settings
) -> Toolbox:
    sandbox = Sandbox(policy, run_key=workspace.name, workspace=workspace)
    config = ToolboxConfig(**{"shell_timeout_s": 20, **settings})
    return Toolbox(
        workspace, config, sandbox=sandbox, approve=operator, cancelled=cancelled
    )


def prepare(workspace: Path, uid: int = NOBODY) -> None:
    """Lay out the files every Law 1 spelling aims at, owned as a run's are."""
    workspace.mkdir(parents=True)
    (workspace / "victim.txt").write_text(VICTIM_TEXT)
    (workspace / "other.txt").write_text("other\n")
    (workspace / "data").mkdir()
    (workspace / "data" / "keep.txt").write_text("keep\n")
    (workspace / "emptydir").mkdir()
    if os.geteuid() == 0:
        for path in [workspace, *workspace.rglob("*")]:
            os.lchown(path, uid, uid)


def snapshot(workspace: Path) -> dict[str, tuple]:
    """Return every path under the workspace with its type, mode and content."""
    found = {}
    for path in sorted(workspace.rglob("*")):
        st = path.lstat()
        content = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path.relative_to(workspace))] = (st.st_mode, content)
    return found


def have(*programs: str) -> bool:
    return all(shutil.which(p) for p in programs)
