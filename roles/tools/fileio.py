"""Reading and writing one file for the file tools, beneath its allowed root.

The file tools (``read_file``, ``read_file_lines``, ``write_file``,
``create_file``, ``apply_edit``) run in the worker, as root when it is. The path
they are given was resolved and confined (``files.resolve_confined``), but a
directory on its way may be swapped for a symlink before the file is opened:
each reaches the path beneath the innermost allowed root that holds it
(``roles.tools.beneath``), so such a swap is refused and nothing is read or
written elsewhere. A write is made with the rights of the root's owner.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from roles.tools.beneath import NotBeneath, Root, as_owner
from roles.tools.errors import ToolError

READ_LIMIT = 200_000


def beneath(path: Path, roots: Sequence[Path] = ()) -> tuple[Path, str]:
    """Return the innermost of ``roots`` holding ``path`` and the path below it
    (without roots, the path's own directory)."""
    holding = [Path(r) for r in roots if path.is_relative_to(r)]
    root = max(holding, key=lambda r: len(r.parts)) if holding else path.parent
    rel = path.relative_to(root).as_posix()
    return root, "" if rel == "." else rel


def _moved(path: Path, verb: str) -> ToolError:
    done = {"read": "read", "write": "written"}[verb]
    return ToolError(
        f"cannot {verb} {path}: a symlink or mount point appeared on its way "
        f"since it was resolved; nothing was {done}"
    )


def open_file(path: Path, roots: Sequence[Path] = (), tool: str = "read_file"):
    """Return a binary file object of the regular file ``path``, opened
    beneath its root, or raise ToolError naming ``tool``."""
    root, rel = beneath(path, roots)
    try:
        with Root(root) as top:
            fd = top.open(rel, os.O_RDONLY | os.O_NONBLOCK)
    except NotBeneath:
        raise _moved(path, "read") from None
    except FileNotFoundError:
        raise ToolError(f"no such file: {path}") from None
    except OSError as err:
        raise ToolError(f"cannot read {path}: {err.strerror or err}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        # A directory opens for reading, but a file object refuses it.
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise ToolError(
            f"{path} is {what}; {tool} reads a file (glob or ls lists a directory)"
        )
    return os.fdopen(fd, "rb")


def read_text(
    path: Path, *, limit: int = READ_LIMIT, roots: Sequence[Path] = ()
) -> str:
    """Return up to ``limit`` bytes of a text file, noting any truncation."""
    with open_file(path, roots) as handle:
        size = os.fstat(handle.fileno()).st_size
        try:
            data = handle.read(limit + 1)
        except OSError as err:
            raise ToolError(f"cannot read {path}: {err.strerror or err}") from None
    if b"\x00" in data[:8192]:
        raise ToolError(f"{path} looks like a binary file; read_file returns text")
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[file truncated: showing {limit} of {size} bytes]"
    return text


def write_text(
    path: Path, content: str, *, roots: Sequence[Path] = (), create: bool = False
) -> tuple[str, list | None, bool]:
    """Write ``content`` to ``path`` beneath its root as the root's owner,
    creating parent directories; return the message, the content mark
    written and whether the file was made. With ``create``, a path that
    exists (whatever it is) is refused and left as it was."""
    if not isinstance(content, str):
        raise ToolError("content must be a string")
    data = content.encode("utf-8")
    root, rel = beneath(path, roots)
    try:
        with Root(root) as top, as_owner(*top.owner):
            _parents(top, rel)
            fd, created = _open_for_write(top, rel, path, create)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                st = os.fstat(fd)
            finally:
                os.close(fd)
    except NotBeneath:
        raise _moved(path, "write") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    except OSError as err:
        raise ToolError(f"cannot write {path}: {err.strerror or err}") from None
    mark = [hashlib.sha256(data).hexdigest(), len(data), st.st_ino]
    written = f"wrote {len(data)} bytes to {path}"
    return written, mark if st.st_nlink == 1 else None, created


def exists(path: Path) -> str:
    """Return create_file's refusal of a path that is there."""
    return (
        f"{path} already exists; create_file makes new files only, nothing was "
        "written (apply_edit changes it, write_file replaces it)"
    )


def _parents(top: Root, rel: str) -> list[str]:
    """Make the missing directories above ``rel``; return those made."""
    made, parts = [], rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if top.lstat(folder) is None:
            top.mkdir(folder, 0o755)
            made.append(folder)
    return made


def _open_for_write(
    top: Root, rel: str, path: Path, create: bool = False
) -> tuple[int, bool]:
    flags = os.O_WRONLY | os.O_NONBLOCK
    try:
        return top.open(rel, flags | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        if create:
            raise ToolError(exists(path)) from None
        fd = top.open(rel, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"not a regular file: {path}")
    os.ftruncate(fd, 0)
    return fd, False
