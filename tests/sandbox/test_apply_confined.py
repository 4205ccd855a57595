"""A command's effect lands beneath its layer, as the layer's owner, or not at all.

Each race is made deterministic: the command runs and its effect is computed
(``Sandbox.run``), then the directory is swapped or the file appears, then the
effect is judged and applied (``Law1.judge``), or the parked effect settled.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from roles.tools import Toolbox, ToolboxConfig, files
from roles.tools.effect import EffectConflict, apply_effect
from roles.tools.effect_pending import effect_from_data, effect_to_data
from roles.tools.errors import ToolError, ToolPaused
from roles.tools.own_files import Made, merge
from roles.tools.sandbox import NOBODY, Sandbox
from roles.tools.shell import parse_shell_output
from tests.sandbox.conftest import VICTIM_TEXT, Operator, make_toolbox

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the worker is root here")


@pytest.fixture
def outside():
    """A root-owned directory outside every allowed path, as /etc is."""
    path = Path(tempfile.mkdtemp(prefix="artoo-outside-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def run(toolbox: Toolbox, command: str):
    """Run ``command`` in the toolbox's sandbox; return it with its effect."""
    return toolbox.sandbox.run(
        command,
        timeout_s=20,
        output_cap=1_000_000,
        cancelled=lambda: False,
        track=lambda proc, running: None,
        kill_grace_s=1,
    )


def judge(toolbox: Toolbox, command: str, done) -> str:
    """Judge and apply a finished command's effect, as the toolbox does."""
    try:
        return toolbox._law1.judge(command, {"command": command}, done)
    finally:
        done.discard()


def swap_for_symlink(directory: Path, target: Path) -> None:
    if directory.is_dir():
        shutil.rmtree(directory)
    directory.symlink_to(target)


def park(toolbox: Toolbox, command: str) -> dict:
    with pytest.raises(ToolPaused) as paused:
        toolbox.call("shell", {"command": command})
    return json.loads(json.dumps(paused.value.pending))


def parks(ask):
    raise ToolPaused()


def settle(policy, workspace: Path, command: str, pending: dict) -> str:
    toolbox = make_toolbox(policy, workspace, Operator(True))
    toolbox.settle(pending, True)
    return toolbox.call("shell", {"command": command})


@root_only
def test_a_made_directory_swapped_for_a_symlink_gets_nothing_written(
    policy, workspace, outside
):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    command = "mkdir d && echo pwn > d/pwn.txt"
    done = run(toolbox, command)
    (workspace / "d").symlink_to(outside)

    with pytest.raises(ToolError, match="changed while the command's effect waited"):
        judge(toolbox, command, done)

    assert os.listdir(outside) == []


@root_only
def test_an_own_directory_swapped_after_the_check_is_refused_beneath(
    policy, workspace, outside
):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    toolbox.call("shell", {"command": "mkdir d"})
    done = run(toolbox, "echo pwn > d/pwn.txt")

    # Held once the stamps are checked, before any write: the apply itself
    # never follows the symlink swapped in then.
    def swap():
        swap_for_symlink(workspace / "d", outside)

    with pytest.raises(EffectConflict, match="d/pwn.txt changed while"):
        apply_effect(done.effect, checked=swap)
    done.discard()

    assert os.listdir(outside) == []


@root_only
def test_an_approved_parked_effect_never_overwrites_through_a_swapped_directory(
    policy, workspace, outside
):
    (workspace / "d").mkdir()
    os.chown(workspace / "d", NOBODY, NOBODY)
    secret = outside / "existing.txt"
    secret.write_text("root's secret\n")
    os.chmod(secret, 0o600)
    command = "echo mine > d/existing.txt && echo more >> victim.txt"
    pending = park(make_toolbox(policy, workspace, parks), command)
    assert {c["path"] for c in pending["ask"]["changes"]} >= {
        str(workspace / "victim.txt")
    }

    swap_for_symlink(workspace / "d", outside)
    with pytest.raises(ToolError, match="changed while the command's effect waited"):
        settle(policy, workspace, command, pending)

    assert secret.read_text() == "root's secret\n"
    assert secret.stat().st_uid == 0 and secret.stat().st_mode & 0o777 == 0o600
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


def test_a_created_file_that_appeared_meanwhile_is_a_conflict(policy, workspace):
    (workspace / "shared").mkdir()
    os.chown(workspace / "shared", NOBODY, NOBODY)
    command = "echo A > shared/report.txt && echo more >> victim.txt"
    pending = park(make_toolbox(policy, workspace, parks), command)
    (workspace / "shared" / "report.txt").write_text("B's report\n")

    with pytest.raises(ToolError, match="changed while the command's effect waited"):
        settle(policy, workspace, command, pending)

    assert (workspace / "shared" / "report.txt").read_text() == "B's report\n"
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


def test_a_file_appearing_between_check_and_rename_undoes_the_pass(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    done = run(toolbox, "echo A > a.txt && echo A > report.txt")

    def appear():
        (workspace / "report.txt").write_text("B's report\n")

    with pytest.raises(EffectConflict, match="appeared while"):
        apply_effect(done.effect, checked=appear)
    done.discard()

    assert (workspace / "report.txt").read_text() == "B's report\n"
    assert not (workspace / "a.txt").exists(), "the pass is undone"
    assert not [p for p in os.listdir(workspace) if "artoo-stage" in p]


@pytest.mark.parametrize("later_subtask", [False, True])
def test_an_own_file_rewritten_in_place_by_someone_else_is_asked_about(
    policy, workspace, later_subtask
):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    toolbox.call("shell", {"command": "echo 'run text' > g.txt"})
    if later_subtask:
        kept = merge({}, toolbox.made)
        toolbox = make_toolbox(policy, workspace, operator)
        toolbox.made.inherit(kept)
    g = workspace / "g.txt"
    st = g.stat()
    with open(g, "r+b") as handle:  # same size, same inode, times put back
        handle.write(b"THEM")
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert g.stat().st_ino == st.st_ino and g.stat().st_size == st.st_size

    toolbox.call("shell", {"command": "rm g.txt"})

    assert len(operator.asks) == 1
    assert g.read_text() == "THEMtext\n"


def test_a_later_subtask_never_marks_an_inherited_file_anew(policy, workspace):
    first = make_toolbox(policy, workspace, Operator(False))
    first.call("write_file", {"path": "g.txt", "content": "run text\n"})
    kept = merge({}, first.made)
    (workspace / "g.txt").write_text("others\n")  # rewritten by someone else
    later = make_toolbox(policy, workspace, Operator(False))
    later.made.inherit(kept)
    later.call("shell", {"command": "echo unrelated > h.txt"})

    again = merge(kept, later.made)

    assert again[str(workspace / "g.txt")] == kept[str(workspace / "g.txt")]
    assert not Made(again).is_own(str(workspace / "g.txt"))
    assert Made(again).is_own(str(workspace / "h.txt"))


@root_only
def test_created_files_are_owned_by_the_layer_owner_not_root(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    toolbox.call("shell", {"command": "mkdir -p n/m && echo x > n/m/f.txt"})
    toolbox.call("write_file", {"path": "w/new.txt", "content": "w\n"})
    for path in ("n", "n/m", "n/m/f.txt", "w", "w/new.txt"):
        assert (workspace / path).stat().st_uid == NOBODY, path


@root_only
def test_applying_where_the_owner_may_not_write_fails_and_applies_nothing(
    policy, base, workspace
):
    allowed = base / "allowed"
    allowed.mkdir(mode=0o755)
    os.chown(allowed, 1000, 1000)
    (allowed / "sub").mkdir()
    os.chown(allowed / "sub", 1000, 1000)  # the owner's while the command runs
    sandbox = Sandbox(
        policy, run_key=workspace.name, workspace=workspace, writable=[allowed]
    )
    toolbox = Toolbox(
        workspace,
        ToolboxConfig(allowed_paths=[allowed], shell_timeout_s=20),
        sandbox=sandbox,
        approve=Operator(False),
    )
    command = f"echo a > {allowed}/top.txt && echo b > {allowed}/sub/in.txt"
    done = run(toolbox, command)
    assert parse_shell_output(done.output)[0] == 0

    # Root's once the stamps are checked: only root's override could write it
    # now, and the apply has the owner's rights, not root's.
    def close():
        os.chown(allowed / "sub", 0, 0)

    with pytest.raises(PermissionError, match="Permission denied"):
        apply_effect(done.effect, checked=close)
    done.discard()

    assert sorted(os.listdir(allowed)) == ["sub"]
    assert os.listdir(allowed / "sub") == []


def test_a_fifo_is_refused_with_a_message_and_nothing_is_applied(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    with pytest.raises(ToolError, match=r"\[sandbox\].*a fifo at .*/p"):
        toolbox.call(
            "shell", {"command": "echo x > new.txt && mkfifo p && rm other.txt"}
        )
    assert not (workspace / "p").exists()
    assert not (workspace / "new.txt").exists()
    assert (workspace / "other.txt").exists()


def test_hard_links_are_applied_as_links(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    toolbox.call("shell", {"command": "echo a > a && ln a b && ln victim.txt v2"})
    a, b = workspace / "a", workspace / "b"
    assert a.stat().st_ino == b.stat().st_ino and b.read_text() == "a\n"
    victim, v2 = workspace / "victim.txt", workspace / "v2"
    assert victim.stat().st_ino == v2.stat().st_ino
    assert victim.read_text() == VICTIM_TEXT


def test_a_sparse_file_stays_sparse(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    toolbox.call("shell", {"command": "truncate -s 200M f && echo end >> f"})
    st = (workspace / "f").stat()
    assert st.st_size == (200 << 20) + 4
    assert st.st_blocks * 512 < 1 << 20


def test_a_pending_effect_round_trips_and_an_old_one_is_refused(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    done = run(toolbox, "mkdir d && echo x > d/a && ln -s a d/l && rm victim.txt")
    try:
        data = json.loads(json.dumps(effect_to_data(done.effect)))
        assert effect_from_data(data) == done.effect
        old = {k: v for k, v in data.items() if k != "version"}
        with pytest.raises(ToolError, match="older version"):
            effect_from_data(old)
    finally:
        done.discard()


@root_only
def test_read_and_write_file_never_pass_a_symlink_swapped_in(
    policy, workspace, outside
):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    toolbox.call("write_file", {"path": "d/note.txt", "content": "mine\n"})
    secret = outside / "note.txt"
    secret.write_text("root's\n")
    os.chmod(secret, 0o600)
    # Resolved while d was a directory, then d is swapped before the tool acts.
    path = toolbox.files.path("d/note.txt")
    swap_for_symlink(workspace / "d", outside)

    with pytest.raises(ToolError, match="symlink or mount point appeared"):
        files.read_text(path, roots=toolbox.roots)
    with pytest.raises(ToolError, match="nothing was written"):
        toolbox.writes.write(path, "pwned\n")
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("read_file", {"path": "d/note.txt"})

    assert secret.read_text() == "root's\n"
    assert sorted(os.listdir(outside)) == ["note.txt"]


def test_a_set_uid_bit_is_never_applied(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    toolbox.call("shell", {"command": "cp /bin/true t && chmod 6755 t"})
    assert (workspace / "t").stat().st_mode & 0o7777 == 0o755
    toolbox.call("shell", {"command": "chmod 4755 t"})
    assert (workspace / "t").stat().st_mode & 0o7777 == 0o755


def test_a_failed_pass_restores_what_it_replaced_and_removed(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(True))
    command = "rm other.txt && echo new > victim.txt && mkdir m && echo z > zz.txt"
    done = run(toolbox, command)

    def appear():  # the last file renamed in
        (workspace / "zz.txt").write_text("theirs\n")

    with pytest.raises(EffectConflict, match="zz.txt appeared while"):
        apply_effect(done.effect, checked=appear)
    done.discard()

    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT
    assert (workspace / "other.txt").read_text() == "other\n"
    assert (workspace / "zz.txt").read_text() == "theirs\n"
    assert not (workspace / "m").exists()
    assert not [p for p in os.listdir(workspace) if "artoo-stage" in p]
