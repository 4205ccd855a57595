"""Applying an Effect: check nothing changed since, stage, then rename in one pass.

``apply_effect`` compares every path the effect touches with the stamp taken
when the effect was computed (else EffectConflict, nothing applied), copies each
new file beside its destination (``.<name>.artoo-stage``), then removes, renames,
links and re-permissions in the recorded order.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roles.tools.effect import Effect

STAGE_SUFFIX = ".artoo-stage"


class EffectConflict(Exception):
    """A path the effect would change was changed by something else meanwhile."""


def apply_effect(effect: Effect) -> None:
    """Apply the effect to the real paths; raise EffectConflict and apply nothing
    when a path it touches changed since the command ran."""
    for path, stamp in effect.stamps.items():
        if file_stamp(Path(path)) != stamp:
            raise EffectConflict(
                f"{path} changed while the command's effect waited; nothing applied"
            )
    staged: list[tuple[Path, Path]] = []
    try:
        for op in effect.ops:
            if op[0] == "mkdir":
                _mkdir(op[1], op[2])
            elif op[0] == "copy":
                staged.append((_stage(op[1], op[2]), op[2]))
        staged_for = {dest: tmp for tmp, dest in staged}
        for op in effect.ops:
            _commit(op, staged_for)
    finally:
        for tmp, _ in staged:
            if tmp.exists():
                tmp.unlink()


def file_stamp(path: Path) -> tuple | None:
    """Return what tells a path changed (mode, size, mtime, inode), or None."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


def _mkdir(path: Path, st) -> None:
    if path.is_dir() and not path.is_symlink():
        return
    if os.path.lexists(path):
        # A file that becomes a directory: its removal was approved with it.
        path.unlink()
    path.mkdir(parents=True)
    os.chmod(path, stat.S_IMODE(st.st_mode))
    _chown(path, st)


def _stage(up: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}{STAGE_SUFFIX}")
    shutil.copy2(up, tmp, follow_symlinks=False)
    _chown(tmp, up.lstat())
    return tmp


def _commit(op: tuple, staged_for: dict[Path, Path]) -> None:
    kind = op[0]
    if kind == "remove":
        path = op[1]
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
    elif kind == "copy":
        dest = op[2]
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        os.replace(staged_for[dest], dest)
    elif kind == "symlink":
        value, dest = op[1], op[2]
        if os.path.lexists(dest):
            dest.unlink()
        os.symlink(value, dest)
    elif kind == "chmod":
        os.chmod(op[1], op[2])
    elif kind == "utime":
        st = op[2]
        os.utime(op[1], ns=(st.st_atime_ns, st.st_mtime_ns))


def _chown(path: Path, st) -> None:
    if os.geteuid() == 0:
        os.lchown(path, st.st_uid, st.st_gid)
