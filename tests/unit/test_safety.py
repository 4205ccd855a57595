"""Law 1: destructive shell fragments and overwrites are recognised, look-alikes not."""

import pytest

from roles.safety import check_shell, check_write


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "existing.txt").write_text("keep me")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("keep me too")
    return tmp_path


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm notes.txt", "rm deletes"),
        ("rm -rf build", "rm deletes"),
        ("sudo rm -rf /", "rm deletes"),
        ("sudo -u root rm x", "rm deletes"),
        ("/bin/rm x", "rm deletes"),
        ("/usr/bin/rm x", "rm deletes"),
        ("\\rm x", "rm deletes"),
        ("command rm x", "rm deletes"),
        ("then rm x", "rm deletes"),
        ("do rm x", "rm deletes"),
        ("else rm x", "rm deletes"),
        ("{ rm x; }", "rm deletes"),
        ("{rm x;}", "rm deletes"),
        ("( rm x )", "rm deletes"),
        ("(rm x)", "rm deletes"),
        ("if true; then rm x; fi", "rm deletes"),
        ("for f in *; do rm $f; done", "rm deletes"),
        ("ls && rm x", "rm deletes"),
        ("false || rm x", "rm deletes"),
        ("ls; rm x", "rm deletes"),
        ("ls\nrm x", "rm deletes"),
        ("sleep 1 & rm x", "rm deletes"),
        ("echo $(rm x)", "rm deletes"),
        ('echo "$(rm x)"', "rm deletes"),
        ("echo `rm x`", "rm deletes"),
        ("FOO=1 rm x", "rm deletes"),
        ("env -i rm x", "rm deletes"),
        ("nice -n 5 rm x", "rm deletes"),
        ("nohup rm x", "rm deletes"),
        ('bash -c "rm x"', "rm deletes"),
        ("rmdir old", "rmdir removes"),
        ("unlink f", "unlink deletes"),
        ("truncate -s 0 log", "truncate destroys"),
        ("shred secret", "shred"),
        ("mkfs /dev/sdb1", "mkfs formats"),
        ("mkfs.ext4 /dev/sdb1", "mkfs formats"),
        ("/sbin/mkfs.vfat /dev/sdb1", "mkfs formats"),
        ("fdisk /dev/sda", "fdisk"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "dd with of="),
        ("find . -name '*.tmp' -delete", "find -delete"),
        ("find . -exec rm {} \\;", "find -exec rm"),
        ("find . -exec /bin/rm -f {} +", "find -exec rm"),
        ("find . -execdir rm {} +", "find -execdir rm"),
        ("ls | xargs rm", "xargs rm"),
        ("ls | xargs -0 rm", "xargs rm"),
        ("ls | xargs -I {} rm {}", "xargs rm"),
        ("ls | xargs /bin/rm", "xargs rm"),
        ("git clean -fdx", "git clean"),
        ("git -C repo clean -f", "git clean"),
    ],
)
def test_destructive_fragments_are_gated(command, reason):
    assert reason in check_shell(command, exists=lambda path: False)


@pytest.mark.parametrize(
    "command",
    [
        "ls | grep rm",
        "echo rm",
        "find . -name '*.go'",
        "find . -name rm",
        "cat x > /dev/null",
        "ls 2>&1",
        "ls > /dev/null 2>&1",
        "echo hi >> existing.txt",
        "command -v rm",
        "git clean -n",
        "git status",
        "dd if=/dev/zero bs=1 count=1",
        "echo 'rm x; rm y'",
        'echo "a; rm x"',
        "echo \\; rm x",
        "grep -r 'rm -rf' .",
        "xargs echo",
        "echo 'unbalanced",
        "mv new.txt other.txt",
        "cp -n a.txt existing.txt",
        "mv --no-clobber a.txt existing.txt",
        "cp existing.txt",
        "echo hi > fresh.txt",
        "echo hi | tee -a existing.txt",
        "echo hi | tee fresh.txt",
        'echo "> existing.txt"',
        "",
    ],
)
def test_harmless_look_alikes_pass(command, workspace):
    assert check_shell(command, cwd=str(workspace)) is None


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("mv a.txt existing.txt", "existing.txt"),
        ("cp a.txt existing.txt", "existing.txt"),
        ("cp -f a.txt existing.txt", "existing.txt"),
        ("cp b.txt a.txt dir", "dir/a.txt"),
        ("mv a.txt dir/", "dir/a.txt"),
        ("cp -t dir a.txt", "dir/a.txt"),
        ("cp --target-directory=dir a.txt", "dir/a.txt"),
        ("mv -- a.txt existing.txt", "existing.txt"),
    ],
)
def test_move_or_copy_onto_an_existing_file_is_gated(command, target, workspace):
    reason = check_shell(command, cwd=str(workspace))

    assert reason.endswith(f"would overwrite existing file: {target}")


def test_move_into_a_directory_without_a_clash_passes(workspace):
    assert check_shell("mv b.txt dir", cwd=str(workspace)) is None


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > existing.txt",
        "echo hi >existing.txt",
        "ls 2> existing.txt",
        "ls &> existing.txt",
        "echo hi >| existing.txt",
        "echo hi | tee existing.txt",
        "cd /; echo hi > {ws}/existing.txt",
    ],
)
def test_redirection_onto_an_existing_file_is_gated(command, workspace):
    command = command.format(ws=workspace)

    assert "existing.txt" in check_shell(command, cwd=str(workspace))


def test_relative_paths_resolve_against_the_workspace(workspace, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")

    assert check_shell("echo x > existing.txt", cwd=str(workspace))
    assert check_shell("echo x > existing.txt", cwd=str(elsewhere)) is None


def test_an_injected_existence_check_is_used():
    seen = []

    def exists(path):
        seen.append(path)
        return path == "/w/report.md"

    assert check_shell("echo x > report.md", exists=exists, cwd="/w")
    assert "/w/report.md" in seen


def test_write_file_onto_an_existing_file_is_gated(workspace):
    reason = check_write("existing.txt", cwd=str(workspace))

    assert reason == "write_file would overwrite existing file: existing.txt"


def test_write_file_to_a_new_file_or_a_directory_passes(workspace):
    assert check_write("new.txt", cwd=str(workspace)) is None
    assert check_write(str(workspace / "dir")) is None


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="command must be a str"):
        check_shell(["rm", "x"])
    with pytest.raises(ValueError, match="non-empty path"):
        check_write("  ")
