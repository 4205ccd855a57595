"""The editing tools beside a real sandbox: Law 1 with the diff, owners, swaps.

``apply_edit`` and ``create_file`` run in the worker as ``write_file`` does:
beneath the path's allowed root, as its owner, and an edit of a file that was
there before is put to the operator with its diff; what a command sees next
is what the tool wrote.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from roles.tools import ToolError
from roles.tools.sandbox import NOBODY
from roles.tools.shell import parse_shell_output
from tests.sandbox.conftest import VICTIM_TEXT, Operator, make_toolbox, snapshot
from tests.sandbox.test_granted import granted_toolbox

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the worker is root here")
EDIT = {"path": "victim.txt", "old": "line two", "new": "line 2"}


@pytest.fixture
def outside():
    """A root-owned directory outside every allowed path, as /etc is."""
    path = Path(tempfile.mkdtemp(prefix="artoo-outside-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_a_denied_edit_of_a_file_that_was_there_leaves_every_byte(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    before = snapshot(workspace)

    output = toolbox.call("apply_edit", EDIT)

    assert output.startswith("[LAW1] apply_edit would change existing file")
    assert snapshot(workspace) == before
    (ask,) = operator.asks
    diff = ask.changes[0]["diff"]
    assert diff.splitlines()[-2:] == ["-line two", "+line 2"]


def test_an_approved_edit_lands_as_the_files_owner_and_commands_see_it(
    policy, workspace
):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    victim = workspace / "victim.txt"
    owner, mode = victim.stat().st_uid, victim.stat().st_mode

    said = toolbox.call("apply_edit", EDIT)
    shown = toolbox.call("shell", {"command": "cat victim.txt"})
    code, seen = parse_shell_output(shown)

    assert said.startswith("replaced 1 occurrence at line 2; ")
    assert (code, seen) == (0, "precious data\nline 2\n")
    assert (victim.stat().st_uid, victim.stat().st_mode) == (owner, mode)


def test_a_created_file_is_the_runs_own_for_its_commands(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)

    toolbox.call("create_file", {"path": "made/new.txt", "content": "n\n"})
    code, _ = parse_shell_output(toolbox.call("shell", {"command": "rm made/new.txt"}))

    assert code == 0 and not (workspace / "made/new.txt").exists()
    assert operator.asks == []  # its own file: deleting it asks nothing
    with pytest.raises(ToolError, match="already exists"):
        toolbox.call("create_file", {"path": "victim.txt", "content": "x"})
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


@root_only
def test_a_created_file_in_a_granted_path_is_its_owners(policy, workspace, base):
    allowed = base / "granted"
    allowed.mkdir(mode=0o755)
    os.chown(allowed, 1000, 1000)
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(False))

    toolbox.call("create_file", {"path": f"{allowed}/d/c.txt", "content": "c\n"})

    assert (allowed / "d/c.txt").stat().st_uid == 1000
    assert (allowed / "d").stat().st_uid == 1000


def test_a_directory_swapped_for_a_symlink_while_the_operator_decides_is_refused(
    policy, workspace, outside
):
    (workspace / "d").mkdir()
    (workspace / "d/conf.txt").write_text("mode = safe\n")
    if os.geteuid() == 0:  # the run's files, as prepare() lays them out
        for path in (workspace / "d", workspace / "d/conf.txt"):
            os.chown(path, NOBODY, NOBODY)
    secret = outside / "conf.txt"
    secret.write_text("mode = safe\n")

    def swaps_then_approves(ask):
        shutil.rmtree(workspace / "d")
        (workspace / "d").symlink_to(outside)
        return True

    toolbox = make_toolbox(policy, workspace, swaps_then_approves)
    edit = {"path": "d/conf.txt", "old": "safe", "new": "open"}

    with pytest.raises(ToolError, match="symlink or mount point appeared"):
        toolbox.call("apply_edit", edit)
    assert secret.read_text() == "mode = safe\n"
    # Resolved now, the path leads out: refused as write_file refuses it.
    with pytest.raises(ToolError, match="outside the workspace") as edited:
        toolbox.call("apply_edit", edit)
    with pytest.raises(ToolError, match="outside the workspace") as written:
        toolbox.call("write_file", {"path": "d/conf.txt", "content": "x"})
    assert str(edited.value) == str(written.value)


@root_only
def test_create_files_write_never_passes_a_symlink_swapped_in(
    policy, workspace, outside
):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    (workspace / "d").mkdir()
    path = toolbox.files.path("d/new.txt")
    shutil.rmtree(workspace / "d")
    (workspace / "d").symlink_to(outside)

    with pytest.raises(ToolError, match="nothing was written"):
        toolbox.writes.write(path, "pwned\n", create=True)

    assert os.listdir(outside) == []
