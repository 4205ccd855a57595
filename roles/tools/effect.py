"""Law 1 by effect: what a sandboxed command changed, judged and applied.

A command runs against an overlay of each writable path, so the overlay's upper
dir holds exactly what it changed: new and copied-up files, ``whiteouts``
(character devices 0/0) for deletions, and ``opaque`` directories whose old
contents are gone. ``compute_effect`` reads the upper dirs against the real
paths and returns an Effect: a list of Changes for the operator and the
operations that apply them. A created file is harmless; deleting, truncating,
overwriting, replacing or changing the permissions of a file that existed
before is destructive. ``apply_effect`` (``roles.tools.effect_apply``, re-exported
here) checks that nothing it touches changed since (else EffectConflict, nothing
applied), stages every new file beside its destination, then renames and deletes
in one quick pass.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from roles.tools.effect_apply import EffectConflict, apply_effect, file_stamp

__all__ = [
    "Change",
    "Effect",
    "EffectConflict",
    "Layer",
    "apply_effect",
    "compute_effect",
]

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
DIFF_MAX_BYTES = 64 * 1024
DIFF_MAX_LINES = 80

DESTRUCTIVE_KINDS = frozenset(
    {"deleted", "truncated", "overwritten", "replaced", "permissions"}
)


@dataclass(frozen=True)
class Layer:
    """One writable path: the real directory and the overlay upper dir over it."""

    target: Path
    upper: Path


@dataclass(frozen=True)
class Change:
    """One change a command made, as the operator reads it."""

    kind: str
    path: str
    size_before: int | None = None
    size_after: int | None = None
    diff: str = ""

    @property
    def destructive(self) -> bool:
        """Return True when the change loses or hides what was there before."""
        return self.kind in DESTRUCTIVE_KINDS

    def line(self) -> str:
        """Return the change in one line: kind, path, sizes."""
        sizes = ""
        if self.size_before is not None or self.size_after is not None:
            before = "-" if self.size_before is None else f"{self.size_before} B"
            after = "-" if self.size_after is None else f"{self.size_after} B"
            sizes = f" ({before} → {after})"
        return f"{self.kind}: {self.path}{sizes}"

    def as_dict(self) -> dict:
        """Return the change as plain data (for the approval request)."""
        return {
            "kind": self.kind,
            "path": self.path,
            "size_before": self.size_before,
            "size_after": self.size_after,
            "diff": self.diff,
        }


@dataclass
class Effect:
    """What a command changed in its writable paths, and how to apply it."""

    changes: list[Change] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)
    stamps: dict[str, tuple | None] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    bytes_written: int = 0

    @property
    def destructive(self) -> list[Change]:
        """Return the changes that need the operator's approval."""
        return [c for c in self.changes if c.destructive]

    def summary(self) -> str:
        """Return e.g. 'deleted 1 existing file' for the destructive changes."""
        counts: dict[str, int] = {}
        for change in self.destructive:
            counts[change.kind] = counts.get(change.kind, 0) + 1
        parts = [
            f"{kind} {n} existing file{'s' if n > 1 else ''}"
            for kind, n in sorted(counts.items())
        ]
        return ", ".join(parts) or "no destructive change"

    def describe(self, limit: int = 50) -> str:
        """Return the destructive changes, one per line (capped at ``limit``)."""
        lines = [c.line() for c in self.destructive[:limit]]
        extra = len(self.destructive) - limit
        if extra > 0:
            lines.append(f"… and {extra} more")
        return "\n".join(lines)


def compute_effect(layers: list[Layer]) -> Effect:
    """Return the Effect recorded in the layers' upper dirs."""
    effect = Effect()
    for layer in layers:
        if layer.upper.is_dir():
            _walk(effect, layer.upper, layer.target, opaque=False)
    return effect


def _walk(effect: Effect, upper: Path, real: Path, *, opaque: bool) -> None:
    names = set()
    for entry in sorted(os.scandir(upper), key=lambda e: e.name):
        names.add(entry.name)
        _entry(effect, Path(entry.path), real / entry.name)
    if opaque and real.is_dir() and not real.is_symlink():
        # An opaque directory hides everything the real one held.
        for name in sorted(os.listdir(real)):
            if name not in names:
                _delete(effect, real / name)


def _entry(effect: Effect, up: Path, real: Path) -> None:
    st = up.lstat()
    existed = os.path.lexists(real)
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        if existed:
            _delete(effect, real)
        return
    if stat.S_ISDIR(st.st_mode):
        _directory(effect, up, real, st, existed)
    elif stat.S_ISREG(st.st_mode):
        _file(effect, up, real, st, existed)
    elif stat.S_ISLNK(st.st_mode):
        _symlink(effect, up, real, existed)
    else:
        effect.skipped.append(f"special file not applied: {real}")


def _directory(effect, up: Path, real: Path, st, existed: bool) -> None:
    is_opaque = _is_opaque(up)
    if existed and real.is_dir() and not real.is_symlink():
        before = stat.S_IMODE(real.stat().st_mode)
        if before != stat.S_IMODE(st.st_mode):
            effect.changes.append(Change("permissions", f"{real}/"))
            _note(effect, real)
            effect.ops.append(("chmod", real, stat.S_IMODE(st.st_mode)))
        _walk(effect, up, real, opaque=is_opaque)
        return
    if existed:
        _delete(effect, real, kind="replaced")
    else:
        effect.changes.append(Change("created", f"{real}/"))
    effect.ops.append(("mkdir", real, st))
    _walk(effect, up, real, opaque=False)


def _file(effect, up: Path, real: Path, st, existed: bool) -> None:
    effect.bytes_written += st.st_size
    if not existed:
        effect.changes.append(Change("created", str(real), None, st.st_size))
        effect.ops.append(("copy", up, real))
        return
    _note(effect, real)
    if real.is_symlink() or not real.is_file():
        _delete(effect, real, kind="replaced", note=False)
        effect.ops.append(("copy", up, real))
        return
    before = real.stat()
    if _same_content(up, real, st.st_size, before.st_size):
        if stat.S_IMODE(before.st_mode) != stat.S_IMODE(st.st_mode):
            mode = f"{stat.S_IMODE(before.st_mode):o} → {stat.S_IMODE(st.st_mode):o}"
            effect.changes.append(
                Change("permissions", str(real), before.st_size, st.st_size, mode)
            )
            effect.ops.append(("chmod", real, stat.S_IMODE(st.st_mode)))
        else:
            effect.changes.append(Change("touched", str(real)))
            effect.ops.append(("utime", real, st))
        return
    kind = "truncated" if st.st_size == 0 else "overwritten"
    effect.changes.append(
        Change(kind, str(real), before.st_size, st.st_size, _diff(real, up))
    )
    effect.ops.append(("copy", up, real))


def _symlink(effect, up: Path, real: Path, existed: bool) -> None:
    value = os.readlink(up)
    if existed:
        if real.is_symlink() and os.readlink(real) == value:
            return
        _delete(effect, real, kind="replaced")
    else:
        effect.changes.append(Change("created", str(real)))
    effect.ops.append(("symlink", value, real))


def _delete(effect, real: Path, kind: str = "deleted", note: bool = True) -> None:
    if note:
        _note(effect, real)
    if real.is_dir() and not real.is_symlink():
        count, size = _tree_size(real)
        effect.changes.append(
            Change(kind, f"{real}/", size, None, f"a directory of {count} files")
        )
    else:
        effect.changes.append(Change(kind, str(real), _size(real), None))
    effect.ops.append(("remove", real))


def _note(effect: Effect, real: Path) -> None:
    effect.stamps.setdefault(str(real), file_stamp(real))


def _size(path: Path) -> int | None:
    try:
        return path.lstat().st_size
    except OSError:
        return None


def _tree_size(path: Path) -> tuple[int, int]:
    count = size = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            count += 1
            size += _size(Path(dirpath) / name) or 0
    return count, size


def _is_opaque(path: Path) -> bool:
    for name in OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _same_content(a: Path, b: Path, size_a: int, size_b: int) -> bool:
    if size_a != size_b:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            chunk = fa.read(1 << 20)
            if chunk != fb.read(1 << 20):
                return False
            if not chunk:
                return True


def _diff(before: Path, after: Path) -> str:
    try:
        if max(before.stat().st_size, after.stat().st_size) > DIFF_MAX_BYTES:
            return ""
        old, new = before.read_bytes(), after.read_bytes()
    except OSError:
        return ""
    if b"\x00" in old or b"\x00" in new:
        return ""
    lines = list(
        difflib.unified_diff(
            old.decode("utf-8", "replace").splitlines(),
            new.decode("utf-8", "replace").splitlines(),
            "before",
            "after",
            lineterm="",
        )
    )
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [f"… {len(lines) - DIFF_MAX_LINES} more"]
    return "\n".join(lines)
