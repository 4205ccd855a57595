"""What computing an effect reads of a file or directory, beneath its layer.

The sizes of a directory's files, whether an upper file holds what its real
file holds, the diff shown to the operator, and whether an upper directory is
opaque: every file is opened beneath its root (``roles.tools.beneath``).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from roles.tools.beneath import Root

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
DIFF_MAX_BYTES = 64 * 1024
DIFF_MAX_LINES = 80
DIFF_LINE_CHARS = 400


def tree_size(root: Root, rel: str) -> tuple[int, int]:
    """Return how many files the directory ``rel`` holds and their bytes."""
    count = size = 0
    fd = root.open(rel, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # fwalk opens each directory by fd, not following symlinks.
        for _, _, names, dir_fd in os.fwalk(".", dir_fd=fd):
            for name in names:
                count += 1
                size += os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
    finally:
        os.close(fd)
    return count, size


def same_content(upper: Root, real: Root, rel: str) -> bool:
    """Return True when the upper and real files ``rel`` hold the same bytes."""
    with _read(upper, rel) as up, _read(real, rel) as before:
        if os.fstat(up.fileno()).st_size != os.fstat(before.fileno()).st_size:
            return False
        while True:
            chunk = up.read(1 << 20)
            if chunk != before.read(1 << 20):
                return False
            if not chunk:
                return True


def diff(real: Root, upper: Root, rel: str) -> str:
    """Return the unified diff of a small text file ``rel``, before → after."""
    try:
        with _read(real, rel) as old, _read(upper, rel) as new:
            before = old.read(DIFF_MAX_BYTES + 1)
            after = new.read(DIFF_MAX_BYTES + 1)
    except OSError:
        return ""
    if max(len(before), len(after)) > DIFF_MAX_BYTES:
        return ""
    if b"\x00" in before or b"\x00" in after:
        return ""
    return unified(before.decode("utf-8", "replace"), after.decode("utf-8", "replace"))


def unified(before: str, after: str) -> str:
    """Return the unified diff of two texts, cut after ``DIFF_MAX_LINES`` lines
    of ``DIFF_LINE_CHARS`` characters."""
    lines = [
        line if len(line) <= DIFF_LINE_CHARS else line[:DIFF_LINE_CHARS] + "…"
        for line in difflib.unified_diff(
            before.splitlines(), after.splitlines(), "before", "after", lineterm=""
        )
    ]
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [f"… {len(lines) - DIFF_MAX_LINES} more"]
    return "\n".join(lines)


def is_opaque(path: Path) -> bool:
    """Return True when the upper directory ``path`` hides the real one's content."""
    for name in OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _read(root: Root, rel: str):
    return os.fdopen(root.open(rel, os.O_RDONLY | os.O_NONBLOCK), "rb")
