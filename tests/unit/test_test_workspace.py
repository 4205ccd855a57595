"""The test session starts from an empty test workspace, and clears no other."""

from __future__ import annotations

import os

from tests.conftest import clear_workspace


def stale_user_area(workspace):
    """Leave what an interrupted session left: a user's shared area with a dir."""
    (workspace / "user-1" / "shared" / "d").mkdir(parents=True)
    (workspace / "user-1" / "shared" / "d").chmod(0o000)
    (workspace / "user-2").symlink_to(workspace / "user-1")
    return workspace


def test_the_test_workspace_is_emptied_of_an_interrupted_sessions_users(tmp_path):
    workspace = stale_user_area(tmp_path / "workspace")
    mode = workspace.stat().st_mode

    assert clear_workspace(workspace, test_area=workspace)
    assert os.listdir(workspace) == []
    assert workspace.stat().st_mode == mode


def test_a_workspace_that_is_not_the_test_area_is_left_alone(tmp_path):
    workspace = stale_user_area(tmp_path / "workspace")

    assert not clear_workspace(workspace, test_area=tmp_path / "elsewhere")
    assert sorted(os.listdir(workspace)) == ["user-1", "user-2"]
