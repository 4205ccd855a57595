"""A project milestone's test file is outside the Implementor's write set: a
sandboxed command that changes it has nothing of its effect applied."""

from __future__ import annotations

import pytest

from roles.tools import ToolError
from tests.sandbox.conftest import VICTIM_TEXT, Operator, make_toolbox, snapshot


@pytest.mark.parametrize(
    "command",
    [
        "echo 'exit 0' > victim.txt; echo made > new.txt",
        "sed -i 's/precious/cheap/' victim.txt",
        "rm -f victim.txt",
        "mv data moved",
    ],
)
def test_a_command_that_changes_a_protected_file_changes_nothing(
    policy, workspace, command
):
    protected = [workspace / "victim.txt", workspace / "data" / "keep.txt"]
    operator = Operator(True)
    toolbox = make_toolbox(policy, workspace, operator, protected_paths=protected)
    before = snapshot(workspace)
    with pytest.raises(ToolError, match="is protected: the milestone's verification"):
        toolbox.call("shell", {"command": command})
    assert snapshot(workspace) == before and operator.asks == []
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


def test_a_command_that_leaves_protected_files_alone_runs(policy, workspace):
    protected = [workspace / "victim.txt"]
    toolbox = make_toolbox(policy, workspace, Operator(True), protected_paths=protected)
    out = toolbox.call("shell", {"command": "cat victim.txt > copy.txt; echo ok"})
    assert out.startswith("[exit code 0]")
    assert (workspace / "copy.txt").read_text() == VICTIM_TEXT


def test_a_new_file_beside_a_protected_one_is_written(policy, workspace):
    protected = [workspace / "data" / "keep.txt"]
    toolbox = make_toolbox(policy, workspace, Operator(True), protected_paths=protected)
    out = toolbox.call("shell", {"command": "echo new > data/new.txt"})
    assert out.startswith("[exit code 0]")
    assert (workspace / "data" / "new.txt").read_text() == "new\n"
