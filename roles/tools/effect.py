"""Law 1 by effect: what a sandboxed command changed, judged and applied.

A command runs against an overlay of each writable path, so the overlay's upper
dir holds exactly what it changed: new and copied-up files, ``whiteouts``
(character devices 0/0) for deletions, and ``opaque`` directories whose old
contents are gone. ``compute_effect`` reads the upper dirs against the real
paths and returns an Effect: a list of Changes for the operator and the
operations that apply them. A created file is harmless; deleting, truncating,
overwriting, replacing or changing the permissions of a file that existed
before is destructive.

Every path is read beneath its layer's root (``roles.tools.beneath``), never
through a symlink, and an operation names its layer and a path relative to it::

    ("copy", 0, "d/new.txt", False)      # layer 0's upper file, created there

With each operation the effect stamps the path and every directory above it up
to the layer's root (a created path is stamped as absent). ``apply_effect``
(``roles.tools.effect_apply``, re-exported here) checks every stamp (else
EffectConflict, nothing applied), stages every new file beside its
destination, then renames and deletes in one quick pass. A fifo, socket or
device the command made is not applied: the effect is refused (``refused``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from roles.tools.beneath import NotBeneath, Root
from roles.tools.effect_apply import EffectConflict, apply_effect, stamp
from roles.tools.effect_read import diff, is_opaque, same_content, tree_size

__all__ = [
    "Change",
    "Effect",
    "EffectConflict",
    "Layer",
    "apply_effect",
    "compute_effect",
]

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
    # (kind, layer, path relative to the layer's root, …): see the module doc.
    ops: list[tuple] = field(default_factory=list)
    # (layer, relative path) -> its stamp when computed (None: absent).
    stamps: dict[tuple[int, str], tuple | None] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Special files the command made: the effect is not applied at all.
    refused: list[str] = field(default_factory=list)
    bytes_written: int = 0
    targets: list[str] = field(default_factory=list)
    uppers: list[str] = field(default_factory=list)

    def path(self, layer: int, rel: str) -> str:
        """Return the real absolute path of ``rel`` in ``layer``."""
        return str(Path(self.targets[layer], rel)) if rel else self.targets[layer]

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
    for index, layer in enumerate(layers):
        effect.targets.append(str(layer.target))
        effect.uppers.append(str(layer.upper))
        if not layer.upper.is_dir():
            continue
        with Root(layer.upper) as upper, Root(layer.target) as real:
            _Walk(effect, index, upper, real).folder("", opaque=False, real=True)
    return effect


class _Walk:
    """Read one layer's upper dir against its real directory, beneath both."""

    def __init__(self, effect: Effect, layer: int, upper: Root, real: Root):
        self.effect, self.layer = effect, layer
        self.upper, self.real = upper, real
        self.inodes: dict[int, str] = {}  # an upper inode's first name (links)

    def folder(self, rel: str, *, opaque: bool, real: bool) -> None:
        names = sorted(self.upper.listdir(rel))
        for name in names:
            self.entry(_join(rel, name), real)
        if opaque and real:
            # An opaque directory hides everything the real one held.
            for name in sorted(set(self.real.listdir(rel)) - set(names)):
                child = _join(rel, name)
                self.delete(child, self.real.lstat(child))

    def entry(self, rel: str, real: bool) -> None:
        st = self.upper.lstat(rel)
        before = self._before(rel) if real else None
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
            if before is not None:
                self.delete(rel, before)
        elif stat.S_ISDIR(st.st_mode):
            self.directory(rel, st, before)
        elif stat.S_ISREG(st.st_mode):
            self.file(rel, st, before)
        elif stat.S_ISLNK(st.st_mode):
            self.symlink(rel, before)
        else:
            kind = "a fifo" if stat.S_ISFIFO(st.st_mode) else "a socket or device"
            self.effect.refused.append(f"{kind} at {self.path(rel)}")

    def _before(self, rel: str) -> os.stat_result | None:
        try:
            return self.real.lstat(rel)
        except NotBeneath:
            return None  # its stamp, and the apply beneath, refuse it

    def directory(self, rel: str, st, before) -> None:
        mode = stat.S_IMODE(st.st_mode)
        if before is not None and stat.S_ISDIR(before.st_mode):
            if stat.S_IMODE(before.st_mode) != mode:
                self.change("permissions", rel + "/")
                self.op("chmod", rel, mode)
            opaque = is_opaque(self.upper.path / rel)
            self.folder(rel, opaque=opaque, real=True)
            return
        if before is not None:
            self.delete(rel, before, kind="replaced")
        else:
            self.change("created", rel + "/")
        self.op("mkdir", rel, mode)
        self.folder(rel, opaque=False, real=False)

    def file(self, rel: str, st, before) -> None:
        self.effect.bytes_written += st.st_size
        first = self.inodes.setdefault(st.st_ino, rel) if st.st_nlink > 1 else rel
        if before is None or not stat.S_ISREG(before.st_mode):
            if before is None:
                self.change("created", rel, None, st.st_size)
            else:
                self.delete(rel, before, kind="replaced")
            self._write(rel, first, overwrite=False)
            return
        if first == rel and same_content(self.upper, self.real, rel):
            if stat.S_IMODE(before.st_mode) != stat.S_IMODE(st.st_mode):
                old, new = stat.S_IMODE(before.st_mode), stat.S_IMODE(st.st_mode)
                modes = f"{old:o} → {new:o}"
                self.change("permissions", rel, before.st_size, st.st_size, modes)
                self.op("chmod", rel, new)
            else:
                self.change("touched", rel)
                self.op("utime", rel, st.st_atime_ns, st.st_mtime_ns)
            return
        kind = "truncated" if st.st_size == 0 else "overwritten"
        self.change(
            kind, rel, before.st_size, st.st_size, diff(self.real, self.upper, rel)
        )
        self._write(rel, first, overwrite=True)

    def _write(self, rel: str, first: str, *, overwrite: bool) -> None:
        if first == rel:
            self.op("copy", rel, overwrite)
        else:
            # A second name of a file the command made: a link, not a copy.
            self.note(first)
            self.op("link", rel, overwrite, first)

    def symlink(self, rel: str, before) -> None:
        with self.upper.at(rel) as (fd, name):
            value = os.readlink(name, dir_fd=fd)
        if before is not None:
            if stat.S_ISLNK(before.st_mode):
                with self.real.at(rel) as (fd, name):
                    if os.readlink(name, dir_fd=fd) == value:
                        return
            self.delete(rel, before, kind="replaced")
        else:
            self.change("created", rel)
        self.op("symlink", rel, value)

    def delete(self, rel: str, before, kind: str = "deleted") -> None:
        if before is not None and stat.S_ISDIR(before.st_mode):
            count, size = tree_size(self.real, rel)
            files = f"a directory of {count} files"
            self.change(kind, rel + "/", size, None, files)
        else:
            self.change(kind, rel, before.st_size if before else None, None)
        self.op("remove", rel)

    def change(self, kind: str, rel: str, *sizes_and_diff) -> None:
        self.effect.changes.append(Change(kind, self.path(rel), *sizes_and_diff))

    def op(self, kind: str, rel: str, *args) -> None:
        self.note(rel)
        self.effect.ops.append((kind, self.layer, rel, *args))

    def note(self, rel: str) -> None:
        """Stamp ``rel`` and, lightly, every directory above it to the root."""
        stamps = self.effect.stamps
        parts = rel.split("/")
        for depth in range(len(parts)):
            above = "/".join(parts[:depth])
            stamps.setdefault((self.layer, above), stamp(self.real, above, True))
        key = (self.layer, rel)
        if key not in stamps or (stamps[key] and len(stamps[key]) == 3):
            stamps[key] = stamp(self.real, rel, False)

    def path(self, rel: str) -> str:
        return self.effect.path(self.layer, rel.rstrip("/")) + (
            "/" if rel.endswith("/") else ""
        )


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name
