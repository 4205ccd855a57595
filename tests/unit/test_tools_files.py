"""File tools on real files: confinement, symlinks, globbing, caps."""

from __future__ import annotations

import os

import pytest

from roles.tools import Toolbox, ToolboxConfig, ToolError


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def toolbox(workspace):
    return Toolbox(workspace)


def test_read_file_resolves_relative_paths_in_the_workspace(toolbox, workspace):
    (workspace / "notes.txt").write_text("hello")
    assert toolbox.call("read_file", {"path": "notes.txt"}) == "hello"


def test_dot_dot_escape_is_refused_with_a_clear_message(toolbox, workspace):
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": "../../etc/passwd"})
    message = str(err.value)
    lands = (workspace / "../../etc/passwd").resolve()
    assert f"path '../../etc/passwd' resolves to {lands}" in message
    assert "outside the workspace" in message


def test_an_absolute_path_outside_the_workspace_is_refused(toolbox):
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("read_file", {"path": "/etc/hostname"})


def test_a_symlink_leading_out_of_the_workspace_is_refused(
    toolbox, workspace, tmp_path
):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (workspace / "link.txt").symlink_to(secret)
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("read_file", {"path": "link.txt"})
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("write_file", {"path": "link.txt", "content": "x"})
    assert secret.read_text() == "top secret"


def test_allowed_paths_extend_the_confinement(workspace, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.csv").write_text("a,b")
    toolbox = Toolbox(workspace, ToolboxConfig(allowed_paths=[shared]))
    assert toolbox.call("read_file", {"path": str(shared / "data.csv")}) == "a,b"


def test_write_file_creates_parent_directories(toolbox, workspace):
    said = toolbox.call("write_file", {"path": "out/deep/report.md", "content": "# ok"})
    assert (workspace / "out/deep/report.md").read_text() == "# ok"
    assert said.startswith("wrote 4 bytes to ")


def test_write_file_refuses_to_escape_with_dot_dot(toolbox, tmp_path):
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("write_file", {"path": "../escaped.txt", "content": "x"})
    assert not (tmp_path / "escaped.txt").exists()


def test_read_file_on_a_missing_file_says_so(toolbox):
    with pytest.raises(ToolError, match="no such file"):
        toolbox.call("read_file", {"path": "missing.txt"})


def test_read_file_refuses_binary_files(toolbox, workspace):
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        toolbox.call("read_file", {"path": "blob.bin"})


def test_read_file_caps_large_files(workspace):
    toolbox = Toolbox(workspace, ToolboxConfig(read_max_bytes=1000))
    (workspace / "big.txt").write_text("x" * 5000)
    toolbox.call("read_file", {"path": "big.txt"})
    full = toolbox.records[-1].output
    assert full == "x" * 1000 + "\n[file truncated: showing 1000 of 5000 bytes]"


def test_glob_recurses_with_double_star(toolbox, workspace):
    (workspace / "a/b").mkdir(parents=True)
    for name in ("top.py", "a/mid.py", "a/b/deep.py", "a/b/skip.txt"):
        (workspace / name).write_text("")
    listing = toolbox.call("glob", {"pattern": "**/*.py"})
    assert listing.splitlines() == ["a/b/deep.py", "a/mid.py", "top.py"]


def test_glob_caps_the_number_of_matches(workspace):
    for number in range(30):
        (workspace / f"f{number:02}.txt").write_text("")
    from roles.tools import files

    listing = files.glob_files(
        "*.txt",
        ".",
        workspace=workspace.resolve(),
        roots=[workspace.resolve()],
        limit=10,
    )
    lines = listing.splitlines()
    assert lines[:10] == [f"f{n:02}.txt" for n in range(10)]
    assert lines[10] == "[… 20 more matches not shown; narrow the pattern]"


def test_glob_does_not_list_symlinks_that_lead_out(toolbox, workspace, tmp_path):
    (tmp_path / "outside.txt").write_text("")
    (workspace / "inside.txt").write_text("")
    (workspace / "sneaky.txt").symlink_to(tmp_path / "outside.txt")
    assert toolbox.call("glob", {"pattern": "*.txt"}) == "inside.txt"


def test_glob_refuses_patterns_that_climb_out(toolbox):
    with pytest.raises(ToolError, match="without '..'"):
        toolbox.call("glob", {"pattern": "../*"})
    with pytest.raises(ToolError, match="outside the workspace"):
        toolbox.call("glob", {"pattern": "*", "root": "/etc"})


def test_glob_with_no_match_says_so_and_how_to_search_inside_files(toolbox):
    said = toolbox.call("glob", {"pattern": "*.nothing"})
    assert said.startswith("(no files matched pattern *.nothing under ")
    assert said.endswith("to find a word inside files, grep -rln 'WORD' DIR)")


def _sources(workspace):
    src = workspace / "src"
    (src / ".git").mkdir(parents=True)
    (src / "a.py").write_text("import b\n\nprint(b.normalize_sku('x'))\n")
    (src / "b.py").write_text("def normalize_sku(sku):\n    return sku.upper()\n")
    (src / "c.py").write_text("normalize_skus = []\n")  # not the whole word
    (src / "blob.bin").write_bytes(b"\0normalize_sku")
    (src / ".git" / "HEAD").write_text("normalize_sku\n")
    return src


def test_a_glob_for_a_guessed_file_name_shows_the_lines_that_hold_its_stem(
    toolbox, workspace
):
    _sources(workspace)
    said = toolbox.call("glob", {"pattern": "**/normalize_sku.py", "root": "src"})
    assert said.splitlines()[1:] == [
        "src/a.py:3: print(b.normalize_sku('x'))",
        "src/b.py:1: def normalize_sku(sku):",
        ")",
    ]
    assert "glob matches file names. Lines under " in said


def test_reading_a_guessed_file_name_names_the_lines_that_hold_its_stem(
    toolbox, workspace
):
    _sources(workspace)
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": "src/normalize_sku.py"})
    assert str(err.value).endswith(
        "that hold 'normalize_sku': src/a.py:3: print(b.normalize_sku('x')); "
        "src/b.py:1: def normalize_sku(sku):)"
    )


def test_a_short_or_unheld_stem_keeps_the_plain_hint(toolbox, workspace):
    _sources(workspace)
    os.mkfifo(workspace / "src" / "fifo")  # never opened, so never waited on
    said = toolbox.call("glob", {"pattern": "**/parse_config.py", "root": "src"})
    assert said.endswith("to find a word inside files, grep -rln 'WORD' DIR)")
    short = toolbox.call("glob", {"pattern": "**/a.txt", "root": "src"})
    assert short.endswith("grep -rln 'WORD' DIR)")


def test_reading_a_directory_is_a_clear_tool_error(toolbox, workspace):
    # A real second derivation read a directory, and the attempt broke on an
    # IsADirectoryError instead of hearing what to do.
    (workspace / "home").mkdir()
    with pytest.raises(ToolError, match="is a directory; read_file reads a file"):
        toolbox.call("read_file", {"path": "home"})
