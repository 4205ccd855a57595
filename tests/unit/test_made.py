"""The files a run made stay its own across subtasks only while untouched."""

from __future__ import annotations

import os

from roles.tools.made import MAX_MARKS, marks, merge, unchanged


def test_a_file_stays_the_runs_own_until_someone_changes_it(tmp_path):
    hello, other = tmp_path / "hello.py", tmp_path / "other.txt"
    hello.write_text("print('hello')\n")
    other.write_text("x\n")
    kept = marks([str(hello), str(other), str(tmp_path / "gone")])
    assert sorted(kept) == [str(hello), str(other)]
    assert unchanged(kept) == {str(hello), str(other)}

    other.write_text("someone else's\n")
    assert unchanged(kept) == {str(hello)}
    hello.unlink()
    hello.write_text("print('hello')\n")  # a new file of the same name
    os.utime(hello, ns=(0, 0))
    assert unchanged(kept) == set()


def test_a_file_with_a_second_name_is_never_the_runs_own(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    theirs.write_text("keep\n")
    os.link(theirs, mine)
    assert marks([str(mine)]) == {}


def test_merging_marks_anew_drops_the_deleted_and_stays_bounded(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("1\n")
    second.write_text("2\n")
    kept = merge({}, [str(first), str(second)])
    first.write_text("the run rewrote it\n")
    second.unlink()
    kept = merge(kept, [str(first), str(second)])
    assert list(kept) == [str(first)] and unchanged(kept) == {str(first)}

    many = {f"/nowhere/{n}": [0, n, 0, 0, 0] for n in range(MAX_MARKS)}
    assert str(first) not in merge(many, [str(first)])
    assert merge({}, []) == {}
