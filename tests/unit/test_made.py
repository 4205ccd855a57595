"""The files a run wrote stay its own only while they hold what it wrote."""

from __future__ import annotations

import os

from roles.tools.own_files import MAX_MARKS, Made, content_mark, merge


def test_a_file_stays_the_runs_own_until_someone_changes_its_content(tmp_path):
    hello, other = tmp_path / "hello.py", tmp_path / "other.txt"
    hello.write_text("print('hello')\n")
    other.write_text("x\n")
    made = Made()
    made.wrote_file(str(hello), content_mark(str(hello)))
    made.wrote_file(str(other), content_mark(str(other)))
    assert made.is_own(str(hello)) and made.is_own(str(other))

    # Rewritten in place, same size, same inode, times put back: not its own.
    st = other.stat()
    with open(other, "r+b") as handle:
        handle.write(b"y")
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert other.stat().st_ino == st.st_ino
    assert not made.is_own(str(other))
    hello.unlink()
    hello.write_text("print('bye!!')\n")  # someone's new file, same size
    assert not made.is_own(str(hello))


def test_a_file_with_a_second_name_is_never_the_runs_own(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    theirs.write_text("keep\n")
    os.link(theirs, mine)
    assert content_mark(str(mine)) is None


def test_merging_keeps_inherited_marks_unchanged_and_stays_bounded(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("1\n")
    second.write_text("2\n")
    earlier = Made()
    earlier.wrote_file(str(first), content_mark(str(first)))
    earlier.wrote_file(str(second), content_mark(str(second)))
    kept = merge({}, earlier)

    # A later subtask inherits both, rewrites neither: its merge keeps the
    # earlier marks even when someone else rewrote the file meanwhile.
    first.write_text("someone else's\n")
    later = Made(kept)
    assert merge(kept, later) == kept
    assert not Made(merge(kept, later)).is_own(str(first))

    # What it writes is marked anew; what it deletes drops out.
    again = Made(kept)
    first.write_text("the run rewrote it\n")
    again.wrote_file(str(first), content_mark(str(first)))
    again.forget(str(second))
    merged = merge(kept, again)
    assert list(merged) == [str(first)] and Made(merged).is_own(str(first))

    many = {f"/nowhere/{n}": ["0" * 64, 0, n] for n in range(MAX_MARKS)}
    assert str(first) not in merge(many, again)
    assert merge({}, Made()) == {}


def test_a_mark_of_the_older_kind_is_ignored(tmp_path):
    path = tmp_path / "old.txt"
    path.write_text("x\n")
    st = path.stat()
    old = {str(path): [st.st_dev, st.st_ino, st.st_mode, st.st_size, 0]}
    assert not Made(old).is_own(str(path))
    assert merge(old, Made()) == {}


def test_parked_marks_come_back_as_they_were(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("p\n")
    made = Made()
    made.wrote_file(str(path), content_mark(str(path)))
    made.forget("/gone")
    back = Made()
    back.resume(made.as_data())
    assert back.is_own(str(path)) and back.as_data() == made.as_data()
    back.resume(["an", "older", "list"])  # an older parked state: ignored
    assert back.is_own(str(path))
