"""The files a run made itself, remembered across its subtasks for Law 1.

A subtask's toolbox knows the files it created (``Law1.made``): changing them
loses nothing that was there before, so Law 1 asks nothing. The run keeps a
mark of each (device, inode, type, size, modification time) when the subtask
ends (none for a file with a second hard link: its content is not the run's
alone); a later subtask counts the file as the run's own only while its mark is
the same, so a file replaced or rewritten by anyone else in between is asked
about again::

    kept = marks(toolbox.made)          # {"/w/hello.py": [2049, 131, 33188, 6, …]}
    later.made.update(unchanged(kept))  # {"/w/hello.py"} while nobody touched it
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

__all__ = ["MAX_MARKS", "marks", "merge", "unchanged"]

# A run that unpacks an archive makes thousands of files; past this many, the
# rest are asked about as anyone's (the run state stays small).
MAX_MARKS = 1000


def marks(paths: Iterable[str]) -> dict[str, list[int]]:
    """Return the mark of each of ``paths`` that exists (not followed if a link)."""
    found = {}
    for path in sorted(paths):
        mark = _mark(path)
        if mark is not None:
            found[path] = mark
    return found


def unchanged(kept: Mapping[str, list[int]]) -> set[str]:
    """Return the paths of ``kept`` whose file still has the mark kept for it."""
    return {path for path, mark in kept.items() if _mark(path) == list(mark)}


def merge(kept: Mapping[str, list[int]], made: Iterable[str]) -> dict[str, list[int]]:
    """Return ``kept`` with the files of ``made`` marked anew (a deleted one
    drops out), at most MAX_MARKS of them, the earlier ones first."""
    made = set(made)
    merged = {path: list(mark) for path, mark in kept.items() if path not in made}
    for path, mark in marks(made).items():
        if len(merged) >= MAX_MARKS:
            break
        merged[path] = mark
    return merged


def _mark(path: str) -> list[int] | None:
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return None  # another name shares its content: not the run's alone
    return [st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns]
