"""What a sandboxed command can see, keep running, consume and change."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from roles import recoverable
from roles.tools import Toolbox, ToolboxConfig
from roles.tools.errors import ToolError
from roles.tools.sandbox import Limits
from roles.tools.sandbox_check import self_check
from roles.tools.shell import parse_shell_output
from tests.conftest import wait_until
from tests.sandbox.conftest import VICTIM_TEXT, Operator, make_toolbox, prepare


def shell(toolbox, command: str) -> tuple[int | None, str]:
    return parse_shell_output(toolbox.call("shell", {"command": command}))


def living(marker: str) -> list[int]:
    """Return the pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline.replace(b"\0", b" "):
                found.append(int(entry))
    return found


def test_self_check_passes_on_this_machine(policy):
    assert self_check(policy) is None


def test_command_runs_as_an_unprivileged_user_on_a_read_only_system(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    code, out = shell(toolbox, "id -u; touch /usr/x; mount -t tmpfs t /mnt; echo end")
    uid = out.splitlines()[0]
    assert uid != "0"
    assert "Read-only file system" in out or "Permission denied" in out
    assert "end" in out
    assert not Path("/usr/x").exists()


def test_python_names_python3_when_the_system_has_no_python(policy, workspace):
    # Small models write `python`; Debian without python-is-python3 has none.
    toolbox = make_toolbox(policy, workspace, Operator(False))
    code, out = shell(toolbox, "python -c 'import sys; print(sys.version_info[0])'")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "3"


def test_app_data_and_other_workspaces_are_invisible(policy, base, workspace):
    secrets = base / "data"
    secrets.mkdir()
    (secrets / "secret_key").write_text("s3cret\n")
    neighbour = base / "workspaces" / "run-b"
    prepare(neighbour)
    (neighbour / "s.txt").write_text("theirs\n")
    hidden = replace(policy, masks=(secrets, base / "workspaces"))
    toolbox = make_toolbox(hidden, workspace, Operator(False))

    for command in (
        f"cat {secrets}/secret_key",
        f"cat {neighbour}/s.txt",
        "cat ../run-b/s.txt",
        "ls /work /root /home /run",
    ):
        code, out = shell(toolbox, command)
        assert code != 0, command
        assert "s3cret" not in out and "theirs" not in out
    code, out = shell(toolbox, f"ls {base}/workspaces")
    assert out.split() == ["run-a"]
    code, out = shell(toolbox, "cat victim.txt")
    assert code == 0 and out == VICTIM_TEXT


def test_hidden_path_inside_an_allowed_path_stays_hidden(policy, base, workspace):
    allowed = base / "projects"
    (allowed / "app" / ".artoo").mkdir(parents=True)
    (allowed / "app" / ".artoo" / "secret_key").write_text("s3cret\n")
    (allowed / "notes.txt").write_text("notes\n")
    hidden = replace(policy, masks=(allowed / "app" / ".artoo",))
    sandbox_toolbox = make_toolbox(hidden, workspace, Operator(False))
    sandbox_toolbox.sandbox.writable = (allowed,)

    code, out = shell(sandbox_toolbox, f"cat {allowed}/notes.txt")
    assert out == "notes\n"
    code, out = shell(sandbox_toolbox, f"cat {allowed}/app/.artoo/secret_key")
    assert code != 0 and "s3cret" not in out


def test_file_tools_refuse_hidden_paths(policy, base, workspace):
    base.chmod(0o755)  # an allowed path the run's user may list
    secrets = base / "data"
    secrets.mkdir()
    (secrets / "secret_key").write_text("s3cret\n")
    toolbox = make_toolbox(
        policy, workspace, Operator(False), allowed_paths=[base], hidden_paths=[secrets]
    )
    with pytest.raises(ToolError, match="hidden from runs"):
        toolbox.call("read_file", {"path": str(secrets / "secret_key")})
    listing = toolbox.call("glob", {"pattern": "**/*", "root": str(base)})
    assert "secret_key" not in listing


@pytest.fixture
def closed(workspace):
    """restricted/ is root's own with mode 700, shared/ holds a readable copy."""
    if os.geteuid() != 0:
        pytest.skip("only a root worker can hold a file the sandbox's uid may not")
    for folder in ("restricted", "shared"):
        (workspace / folder).mkdir()
        (workspace / folder / "stock.csv").write_text("sku,qty\nA-1,0\n")
    (workspace / "restricted" / "ledger.txt").write_text("salary of Ada: 91000\n")
    os.chown(workspace / "restricted", 0, 0)
    (workspace / "restricted").chmod(0o700)
    return workspace


def test_file_tools_have_no_more_rights_than_the_shell(policy, closed):
    toolbox = make_toolbox(policy, closed, Operator(True))
    code, out = shell(toolbox, "cat restricted/stock.csv")
    assert code != 0 and "Permission denied" in out
    with pytest.raises(ToolError, match="permission denied: .*restricted/stock.csv"):
        toolbox.call("read_file", {"path": "restricted/stock.csv"})
    # The refusal names the copy the run's user may read, as R4a reads it.
    said = f"ERROR: {toolbox.records[-1].output.removeprefix('ERROR: ')}"
    assert recoverable.NAMESAKES.search(said)["named"] == "shared/stock.csv"
    assert toolbox.call("read_file", {"path": "shared/stock.csv"}) == "sku,qty\nA-1,0\n"
    listing = toolbox.call("glob", {"pattern": "**/*.csv"})
    assert "shared/stock.csv" in listing and "restricted" not in listing
    with pytest.raises(ToolError, match="permission denied"):
        toolbox.call("glob", {"pattern": "*", "root": "restricted"})
    with pytest.raises(ToolError, match="permission denied"):
        toolbox.call("write_file", {"path": "restricted/new.txt", "content": "x"})
    assert not (closed / "restricted" / "new.txt").exists()


def test_a_blocked_path_the_uid_may_not_read_is_refused_with_its_readable_copy(
    policy, closed
):
    # GGS blocked the closed path after reading it failed; the next round's
    # executor, told only "choose another approach", gave up.
    blocked = str(closed / "restricted" / "stock.csv")
    toolbox = make_toolbox(policy, closed, Operator(False), blocked_targets=[blocked])
    with pytest.raises(ToolError, match="blocked by GGS") as err:
        toolbox.call("read_file", {"path": blocked})
    said = f"ERROR: {err.value}"
    assert recoverable.NAMESAKES.search(said)["named"] == "shared/stock.csv"
    assert "ledger" not in said


def test_a_command_denied_a_file_is_told_of_the_copy_the_uid_may_read(policy, closed):
    # Told "Permission denied" by wc, grep, awk, cut and sort in turn, a real
    # executor never looked for the readable copy in shared/.
    toolbox = make_toolbox(policy, closed, Operator(False))
    for command in (
        "wc -l restricted/stock.csv",
        f"cat < {closed}/restricted/stock.csv",
    ):
        code, out = shell(toolbox, command)
        assert code != 0 and "Permission denied" in out
        assert out.rstrip().endswith(
            ": the run's user may not read it; files named 'stock.csv' under "
            f"{closed} it may read: shared/stock.csv]"
        ), out
        assert "ledger" not in out
        assert recoverable.namesakes(toolbox.evidence)[1] == "shared/stock.csv"
    code, out = shell(toolbox, "cat restricted/ledger.txt")
    assert code != 0 and "Permission denied" in out and "it may read" not in out


def test_a_command_told_no_such_file_is_told_only_of_namesakes_the_uid_may_list(
    policy, closed
):
    toolbox = make_toolbox(policy, closed, Operator(False))
    code, out = shell(toolbox, f"wc -l {closed}/stock.csv")
    assert code != 0 and "No such file or directory" in out
    assert out.endswith(f"files named 'stock.csv' under {closed}: shared/stock.csv]")
    code, out = shell(toolbox, f"grep Ada {closed}/ledger.txt")
    assert code != 0 and "No such file or directory" in out
    assert "[no such file" not in out and "restricted" not in out


def test_hints_never_name_or_quote_what_the_uid_may_not_read(policy, closed):
    toolbox = make_toolbox(policy, closed, Operator(False))
    # A missing file's hint walks the tree for namesakes and for lines naming it.
    for path in ("ledger.txt", "salary.txt"):
        with pytest.raises(ToolError) as err:
            toolbox.call("read_file", {"path": path})
        assert "91000" not in str(err.value)
        assert "restricted" not in str(err.value)
    listing = toolbox.call("glob", {"pattern": "**/salary*"})
    assert "91000" not in listing and "restricted" not in listing


def test_a_variable_never_set_is_an_error_in_the_sandbox_too(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    code, out = shell(toolbox, "echo $HOME; ls $directory; echo listed")
    assert code == 127, out
    assert "directory: unbound variable" in out and "listed" not in out
    assert "[$directory is not set" in out


def test_environment_is_an_allowlist(policy, workspace, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "do-not-leak")
    monkeypatch.setenv("REDIS_URL", "redis://secret@127.0.0.1:6379/0")
    monkeypatch.setenv("OPERATOR_CHOSEN", "visible")
    passing = replace(policy, env_names=("OPERATOR_CHOSEN",))
    toolbox = make_toolbox(passing, workspace, Operator(False))
    code, out = shell(toolbox, "env")
    assert code == 0
    assert "do-not-leak" not in out and "redis://" not in out
    assert "OPERATOR_CHOSEN=visible" in out


@pytest.mark.parametrize(
    "command",
    [
        "setsid sleep 100004 &",
        "nohup sleep 100005 > /dev/null 2>&1 &",
        "(sleep 100006 &) ; echo forked",
        "bash -c 'setsid bash -c \"sleep 100007 &\" &'",
    ],
)
def test_processes_started_by_a_command_die_with_it(policy, workspace, command):
    marker = "sleep 10000" + command.split("sleep 10000")[1][0]
    toolbox = make_toolbox(policy, workspace, Operator(False))
    shell(toolbox, command)
    assert wait_until(lambda: not living(marker), timeout=10)


def test_timeout_kills_the_whole_sandbox(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False), shell_timeout_s=1)
    with pytest.raises(ToolError, match="timed out"):
        toolbox.call("shell", {"command": "setsid sleep 100008 & sleep 100009"})
    assert wait_until(lambda: not living("sleep 10000"), timeout=10)


def test_fork_bomb_is_contained(policy, workspace):
    small = replace(policy, limits=Limits(cpu_s=10, processes=64))
    toolbox = make_toolbox(small, workspace, Operator(False), shell_timeout_s=3)
    try:
        toolbox.call("shell", {"command": "bomb() { bomb | bomb & }; bomb"})
    except ToolError:
        pass
    after = make_toolbox(policy, workspace, Operator(False))
    assert shell(after, "echo alive") == (0, "alive\n")


def test_memory_hog_is_refused_memory(policy, workspace):
    small = replace(policy, limits=Limits(memory_mb=256))
    toolbox = make_toolbox(small, workspace, Operator(False))
    code, out = shell(toolbox, "python3 -c 'b = bytearray(2 << 30)'")
    assert code != 0
    assert "MemoryError" in out


def test_network_can_be_switched_off(policy, workspace):
    offline = replace(policy, network="none")
    toolbox = make_toolbox(offline, workspace, Operator(False))
    connect = "import socket; socket.create_connection(('127.0.0.1', 6379), 2)"
    code, out = shell(toolbox, f'python3 -c "{connect}"')
    assert code != 0
    assert "Network is unreachable" in out or "Connection refused" in out


def test_created_files_apply_at_once_without_asking(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    code, _ = shell(toolbox, "mkdir -p out/deep && echo new > out/deep/made.txt")
    assert code == 0
    assert operator.asks == []
    made = workspace / "out" / "deep" / "made.txt"
    assert made.read_text() == "new\n"
    if os.geteuid() == 0:
        assert made.stat().st_uid == policy.uid


def test_what_the_subtask_made_itself_is_changed_without_asking(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    shell(toolbox, "echo 'hello from artoo' > hello.py")
    toolbox.call("write_file", {"path": "hello.py", "content": "print('hello')"})
    shell(toolbox, "echo \"print('again')\" > hello.py")
    assert operator.asks == []
    assert (workspace / "hello.py").read_text() == "print('again')\n"
    shell(toolbox, "rm hello.py victim.txt")
    # victim.txt was there before: the whole command is put to the operator.
    assert len(operator.asks) == 1
    assert {c["path"] for c in operator.asks[0].changes} == {
        str(workspace / "hello.py"),
        str(workspace / "victim.txt"),
    }
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


def test_a_file_created_and_removed_by_one_command_asks_nothing(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    shell(toolbox, "echo tmp > scratch.txt && rm scratch.txt && touch victim.txt")
    assert operator.asks == []
    assert not (workspace / "scratch.txt").exists()
    assert (workspace / "victim.txt").read_text() == VICTIM_TEXT


def test_the_approval_shows_sizes_and_a_diff(policy, workspace):
    operator = Operator(False)
    toolbox = make_toolbox(policy, workspace, operator)
    shell(toolbox, "sed -i 's/precious/gone/' victim.txt")
    (change,) = operator.asks[0].changes
    assert change["kind"] == "overwritten"
    assert change["size_before"] == len(VICTIM_TEXT)
    assert "-precious data" in change["diff"] and "+gone data" in change["diff"]


def test_a_file_changed_while_waiting_is_not_overwritten(policy, workspace):
    victim = workspace / "victim.txt"

    def operator(ask):
        victim.write_text("written meanwhile\n")
        return True

    toolbox = make_toolbox(policy, workspace, operator)
    with pytest.raises(ToolError, match="changed while"):
        toolbox.call("shell", {"command": "rm victim.txt"})
    assert victim.read_text() == "written meanwhile\n"


def test_shell_is_refused_when_the_sandbox_does_not_work(workspace):
    toolbox = Toolbox(
        workspace, ToolboxConfig(sandbox_error="user namespaces are disabled")
    )
    with pytest.raises(ToolError, match="ARTOO_SANDBOX=off"):
        toolbox.call("shell", {"command": "echo hi"})


def test_scratch_is_removed_after_each_command(policy, workspace):
    toolbox = make_toolbox(policy, workspace, Operator(False))
    shell(toolbox, "rm victim.txt; echo x > y")
    run_dir = toolbox.sandbox.run_dir
    # The run's disk budget (roles/tools/diskquota.py) is kept beside its /tmp.
    assert sorted(p.name for p in run_dir.iterdir()) == ["quota.json", "tmp"]


def test_a_command_that_reaches_for_a_hidden_path_is_told_why(policy, base, workspace):
    secrets = base / "data"
    secrets.mkdir()
    (secrets / "secret_key").write_text("s3cret\n")
    hidden = replace(policy, masks=(secrets,))
    toolbox = make_toolbox(hidden, workspace, Operator(False), hidden_paths=[secrets])
    code, out = shell(toolbox, f"cat {secrets}/secret_key")
    assert code == 1
    assert out.endswith(
        f"[sandbox] {secrets}/secret_key is not visible to this run: the "
        "application's data, its code and other runs' workspaces are hidden "
        "from commands"
    )
    code, out = shell(toolbox, "cat missing.txt")
    assert "[sandbox]" not in out
