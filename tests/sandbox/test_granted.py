"""An allowed path is writable as granted: commands write there as its owner would.

The operator who allows a path grants writes beneath it. A command runs as
the sandbox's uid; in its view of an allowed path of another owner (root
included) that owner's files are its own (an idmapped mount under the
overlay), so it creates, renames and edits there as the owner would; the
apply step writes as the owner too, beneath the path, and Law 1 asks as
anywhere else. Files of a third user stay closed to it: root's override of
their modes is never lent to a command.
"""

from __future__ import annotations

import os
import stat

import pytest

from roles.tools import Toolbox, ToolboxConfig
from roles.tools.sandbox import NOBODY, Sandbox
from roles.tools.shell import parse_shell_output
from tests.sandbox.conftest import Operator

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only a root worker maps an owner for its commands"
)


def granted_toolbox(policy, workspace, allowed, operator) -> Toolbox:
    sandbox = Sandbox(
        policy, run_key=workspace.name, workspace=workspace, writable=[allowed]
    )
    return Toolbox(
        workspace,
        ToolboxConfig(allowed_paths=[allowed], shell_timeout_s=20),
        sandbox=sandbox,
        approve=operator,
    )


@pytest.fixture
def allowed(base):
    """A root-owned directory the operator allowed, as /srv/data would be."""
    path = base / "granted"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    (path / "old.txt").write_text("old\n")
    (path / "docs").mkdir()
    return path


def shell(toolbox: Toolbox, command: str) -> tuple[int, str]:
    return parse_shell_output(toolbox.call("shell", {"command": command}))


def test_a_root_owned_allowed_directory_receives_a_created_file(
    policy, workspace, allowed
):
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(False))

    code, out = shell(toolbox, f"echo made > {allowed}/docs/new.txt && echo ok")

    assert (code, out.strip()) == (0, "ok")
    created = allowed / "docs" / "new.txt"
    assert created.read_text() == "made\n"
    assert created.stat().st_uid == 0  # written as the path's owner


def test_a_rename_in_a_root_owned_allowed_directory_asks_and_applies(
    policy, workspace, allowed
):
    operator = Operator(True)
    toolbox = granted_toolbox(policy, workspace, allowed, operator)

    code, _ = shell(toolbox, f"mv {allowed}/old.txt {allowed}/renamed.txt")

    assert code == 0
    assert len(operator.asks) == 1  # the old name goes: Law 1 asks
    assert not (allowed / "old.txt").exists()
    assert (allowed / "renamed.txt").read_text() == "old\n"
    assert (allowed / "renamed.txt").stat().st_uid == 0


def test_a_denied_rename_leaves_the_allowed_directory_as_it_was(
    policy, workspace, allowed
):
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(False))

    shell(toolbox, f"mv {allowed}/old.txt {allowed}/renamed.txt")

    assert sorted(os.listdir(allowed)) == ["docs", "old.txt"]


def test_writes_are_made_as_an_ordinary_owner_too(policy, workspace, base):
    mine = base / "users-dir"
    mine.mkdir()
    os.chown(mine, 1000, 1000)
    os.chmod(mine, 0o700)  # closed to everyone but its owner
    toolbox = granted_toolbox(policy, workspace, mine, Operator(False))

    code, out = shell(toolbox, f"echo hi > {mine}/a.txt && id -u")

    assert code == 0 and out.strip() == str(NOBODY)  # the command's own uid
    assert (mine / "a.txt").stat().st_uid == 1000


def test_a_third_users_file_stays_closed_as_it_is_to_the_owner(
    policy, workspace, allowed
):
    theirs = allowed / "theirs.txt"
    theirs.write_text("not yours\n")
    os.chown(theirs, 1000, 1000)
    os.chmod(theirs, 0o644)
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(True))

    code, out = shell(toolbox, f"echo mine > {theirs}")

    # Root owns the path; 1000's file is not root's to write through the
    # command (its owner bits are 1000's), whatever the operator answers.
    assert code != 0 and "Permission denied" in out
    assert theirs.read_text() == "not yours\n"


def test_nothing_is_written_outside_the_allowed_path(policy, workspace, allowed, base):
    outside = base / "outside"
    outside.mkdir()
    before = stat.S_IMODE(outside.stat().st_mode)
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(True))

    code, out = shell(toolbox, f"echo x > {outside}/f.txt")

    assert code != 0
    assert list(outside.iterdir()) == []
    assert stat.S_IMODE(outside.stat().st_mode) == before


def test_a_file_written_by_the_file_tool_is_the_owners_and_commands_can_edit_it(
    policy, workspace, allowed
):
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(False))

    toolbox.call("write_file", {"path": f"{allowed}/docs/w.txt", "content": "w\n"})
    code, _ = shell(toolbox, f"echo more >> {allowed}/docs/w.txt")

    assert code == 0
    written = allowed / "docs" / "w.txt"
    assert written.stat().st_uid == 0
    assert written.read_text() == "w\nmore\n"  # its own file: asked nothing


def test_a_workspace_inside_a_granted_path_is_written_as_the_sandboxs_own(
    policy, base, allowed
):
    # A project's directory is its runs' workspace, inside the allowed path.
    workspace = allowed / "project"
    workspace.mkdir()
    toolbox = granted_toolbox(policy, workspace, allowed, Operator(False))

    toolbox.call("write_file", {"path": "notes.txt", "content": "n\n"})
    code, _ = shell(toolbox, "echo more >> notes.txt && echo new > other.txt")

    assert code == 0
    assert (workspace / "notes.txt").read_text() == "n\nmore\n"
    assert (workspace / "other.txt").stat().st_uid == NOBODY


def test_a_project_directory_of_root_s_files_is_edited_as_its_owner(
    policy, base, allowed
):
    # A repository the user brought: root's directory and files, 0644. The
    # project's runs keep it root's and edit it as root would.
    project = allowed / "repo"
    project.mkdir()
    (project / "greet.py").write_text("print('hi')\n")
    (project / "greet.py").chmod(0o644)
    sandbox = Sandbox(
        policy,
        run_key="repo",
        workspace=project,
        writable=[allowed],
        own_workspace=False,
    )
    toolbox = Toolbox(
        project,
        ToolboxConfig(allowed_paths=[allowed], shell_timeout_s=20),
        sandbox=sandbox,
        approve=Operator(True),
    )

    # sed -i rewrites the file even when nothing matches.
    edit = "sed -i 's/absent/x/' greet.py && sed -i 's/hi/hello/' greet.py"
    code, _ = shell(toolbox, f"{edit} && echo x > new.txt")
    toolbox.call("apply_edit", {"path": "greet.py", "old": "hello", "new": "hey"})

    assert code == 0
    assert (project / "greet.py").read_text() == "print('hey')\n"
    owners = {p.name: p.stat().st_uid for p in (project, *project.iterdir())}
    assert owners == {"repo": 0, "greet.py": 0, "new.txt": 0}
