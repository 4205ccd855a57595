"""The sandbox uid's rights as the worker's file tools judge them."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from roles.tools.access import OPEN, READ, SEARCH, WRITE, Access, for_policy
from roles.tools.errors import ToolError
from roles.tools.sandbox import NOBODY, SandboxPolicy

# A uid that owns nothing here: only the "other" bits speak for it.
STRANGER = Access(NOBODY)


@pytest.fixture
def tree():
    # pytest's own temporary directories are closed to other uids (mode 700).
    tmp_path = Path(tempfile.mkdtemp(prefix="artoo-access-", dir="/var/tmp"))
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "a.txt").write_text("a\n")
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "b.txt").write_text("b\n")
    (tmp_path / "closed").chmod(0o700)
    (tmp_path / "private.txt").write_text("p\n")
    (tmp_path / "private.txt").chmod(0o600)
    tmp_path.chmod(0o755)
    yield tmp_path
    (tmp_path / "closed").chmod(0o755)
    shutil.rmtree(tmp_path)


def test_the_other_bits_speak_for_a_uid_that_owns_nothing(tree):
    assert STRANGER.closed(tree / "open" / "a.txt", READ) is None
    assert STRANGER.closed(tree / "private.txt", READ) == tree / "private.txt"
    assert STRANGER.closed(tree / "closed" / "b.txt", READ) == tree / "closed"
    # A file that does not exist is judged where it would be.
    assert STRANGER.closed(tree / "closed" / "none.txt", READ) == tree / "closed"
    assert STRANGER.closed(tree / "open" / "none.txt", READ) is None


def test_writing_needs_the_file_or_its_directory_writable(tree):
    assert STRANGER.closed(tree / "open" / "a.txt", WRITE) == tree / "open" / "a.txt"
    assert STRANGER.closed(tree / "open" / "new" / "c.txt", WRITE) == tree / "open"
    (tree / "open").chmod(0o777)
    assert STRANGER.closed(tree / "open" / "new" / "c.txt", WRITE) is None


def test_only_the_roots_and_what_lies_below_them_are_judged(tree):
    # The sandbox binds its roots into a tree of its own: a closed directory
    # above a root is not on its way.
    (tree / "closed" / "inner").mkdir()
    (tree / "closed" / "inner" / "c.txt").write_text("c\n")
    bound = Access(NOBODY, (tree / "closed" / "inner",))
    assert bound.closed(tree / "closed" / "inner" / "c.txt", READ) is None
    assert STRANGER.closed(tree / "closed" / "inner" / "c.txt", READ) is not None


def test_the_owner_bits_speak_for_the_owner(tree):
    mine = Access(os.geteuid())
    assert mine.closed(tree / "closed" / "b.txt", READ) is None
    assert mine.allows(tree / "private.txt", READ | WRITE)
    assert not mine.allows(tree / "private.txt", SEARCH)


def test_the_refusal_names_the_closed_directory(tree):
    with pytest.raises(ToolError, match=r"may not read it \(.*closed is closed"):
        STRANGER.check(tree / "closed" / "b.txt", READ)
    with pytest.raises(ToolError, match="may not list it$"):
        STRANGER.check(tree / "closed", READ | SEARCH)


def test_a_listing_stops_at_a_directory_the_uid_may_not_list(tree):
    listable = STRANGER.lister(tree)
    assert listable(tree / "open" / "a.txt")
    assert not listable(tree / "closed" / "b.txt")
    assert OPEN.lister(tree)(tree / "closed" / "b.txt")


def test_only_a_root_worker_is_held_to_the_sandbox_uid(tmp_path):
    policy = SandboxPolicy(state_dir=tmp_path)
    expected = OPEN if os.geteuid() != 0 else Access(NOBODY)
    assert for_policy(policy) == expected
    assert for_policy(None) == OPEN
