"""The files a run wrote itself, by a stamp of what it wrote, for Law 1.

Changing a file the run wrote loses nothing that was there before the run, so
Law 1 asks nothing. A file counts as the run's own only while its content is
exactly what the run wrote: when the run writes a file (a created file applied,
an own file overwritten, ``write_file``) it keeps a content mark, the sha256 of
the bytes, their size and the inode; Law 1 takes the file's mark again when it
judges, so a rewrite by anyone else in between, in place and of the same size,
is asked about. A file with a second hard link, or too big to hash, is never
marked (its content is not the run's alone, or not cheaply known)::

    made = Made(state.made)                      # the earlier subtasks' marks
    made.wrote_file("/w/g.txt", content_mark(fd))
    made.is_own("/w/g.txt")                      # True while nobody touched it
    state.made = merge(state.made, made)         # only what this subtask wrote

A subtask never re-marks what it inherited: its marks are carried unchanged.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping

from roles.tools.beneath import CHUNK

__all__ = ["MARK_MAX_BYTES", "MAX_MARKS", "Made", "content_mark", "merge"]

# A run that unpacks an archive makes thousands of files; past this many, the
# rest are asked about as anyone's (the run state stays small).
MAX_MARKS = 1000
# Hashing a bigger file at each judgment costs seconds: it is asked about.
MARK_MAX_BYTES = 256 << 20


def content_mark(path: str | int) -> list | None:
    """Return [sha256, size, inode] of a regular file (a path, not followed if a
    link, or an open fd), or None when it has another name or is too big."""
    try:
        fd = path if isinstance(path, int) else _open(path)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        if st.st_size > MARK_MAX_BYTES:
            return None
        digest, offset = hashlib.sha256(), 0
        while chunk := os.pread(fd, CHUNK, offset):
            digest.update(chunk)
            offset += len(chunk)
        return [digest.hexdigest(), offset, st.st_ino]
    except OSError:
        return None
    finally:
        if not isinstance(path, int):
            os.close(fd)


def _open(path: str) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    return os.open(path, flags)


def is_mark(mark) -> bool:
    """Return True for a content mark (an older kind of mark is not one)."""
    return (
        isinstance(mark, (list, tuple))
        and len(mark) == 3
        and isinstance(mark[0], str)
        and len(mark[0]) == 64
    )


class Made:
    """The content marks of the files a run wrote: inherited, and this subtask's."""

    def __init__(self, kept: Mapping[str, list] | None = None):
        self.marks: dict[str, list] = {}
        self.wrote: dict[str, list] = {}
        self.dropped: set[str] = set()
        self.inherit(kept or {})

    def inherit(self, kept: Mapping[str, list]) -> None:
        """Take the marks earlier subtasks kept (an older kind is dropped)."""
        for path, mark in kept.items():
            if is_mark(mark):
                self.marks[path] = list(mark)

    def is_own(self, path: str) -> bool:
        """Return True when ``path`` holds exactly what the run wrote there."""
        mark = self.marks.get(path)
        return mark is not None and content_mark(path) == mark

    def wrote_file(self, path: str, mark: list | None) -> None:
        """Mark ``path`` as written by this subtask (None: not the run's alone)."""
        if mark is None:
            self.forget(path)
            return
        self.marks[path] = list(mark)
        self.wrote[path] = list(mark)
        self.dropped.discard(path)

    def forget(self, path: str) -> None:
        """Drop the mark of a file this subtask deleted or lost."""
        if self.marks.pop(path, None) is not None or path in self.wrote:
            self.dropped.add(path)
        self.wrote.pop(path, None)

    def as_data(self) -> dict:
        """Return this subtask's own marks as plain data (kept while parked)."""
        return {"wrote": dict(self.wrote), "dropped": sorted(self.dropped)}

    def resume(self, data) -> None:
        """Take back what ``as_data`` returned (an older kind is ignored)."""
        if not isinstance(data, Mapping):
            return
        for path, mark in data.get("wrote", {}).items():
            if is_mark(mark):
                self.wrote_file(path, mark)
        for path in data.get("dropped", []):
            self.forget(path)


def merge(kept: Mapping[str, list], made: Made) -> dict[str, list]:
    """Return ``kept`` unchanged but for the files ``made`` wrote (marked anew)
    or dropped, at most MAX_MARKS of them, the earlier ones first."""
    changed = made.dropped | set(made.wrote)
    merged = {
        path: list(mark)
        for path, mark in kept.items()
        if path not in changed and is_mark(mark)
    }
    for path, mark in made.wrote.items():
        if len(merged) >= MAX_MARKS:
            break
        merged[path] = list(mark)
    return merged
