"""Applying an Effect beneath its layers, with their owners' rights, or not at all.

``apply_effect`` opens each layer's root once and reaches every path beneath it
(``roles.tools.beneath``): a symlink or mount point met on the way is a
conflict, whatever a directory became since the command ran. It compares every
stamp taken when the effect was computed (the paths and the directories above
them; a created path must still be absent), else EffectConflict and nothing
applied. Then it copies each new file beside its destination, keeping holes,
and in one pass renames them in (a created one with ``RENAME_NOREPLACE``, so a
file that appeared meanwhile is a conflict, never clobbered), moves what is
removed aside, links and re-permissions. A failure in that pass undoes what the
pass did. Each layer's operations run with the rights of the uid owning its
root (``as_owner``): root's are used only in a root-owned layer.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from roles.tools.beneath import (
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    NotBeneath,
    Root,
    as_owner,
    copy_sparse,
)
from roles.tools.own_files import MARK_MAX_BYTES

if TYPE_CHECKING:
    from roles.tools.effect import Effect

STAGE_SUFFIX = ".artoo-stage"
# A stamp of a path that a symlink or mount point on its way made unreachable.
UNREACHABLE = ("unreachable",)


class EffectConflict(Exception):
    """A path the effect would change was changed by something else meanwhile."""


def stamp(root: Root, rel: str, light: bool) -> tuple | None:
    """Return what tells ``rel`` changed, or None when it is absent: (inode,
    mode, owner) of a directory above a change (``light``), else (mode, size,
    mtime, ctime, inode, owner); ctime moves with any rewrite, even in place."""
    try:
        st = root.lstat(rel)
    except NotBeneath:
        return UNREACHABLE
    if st is None:
        return None
    if light:
        return (st.st_ino, st.st_mode, st.st_uid)
    return (
        st.st_mode,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        st.st_uid,
    )


def apply_effect(
    effect: Effect, checked: Callable[[], None] | None = None
) -> dict[str, list | None]:
    """Apply the effect beneath its layers; raise EffectConflict and apply
    nothing when a path it touches changed since the command ran. Return the
    content mark (``roles.tools.own_files``) of each file written, by path.

    ``checked`` is called once the stamps are checked, before any write: the
    moment a race would strike (tests hold the apply there).
    """
    with ExitStack() as stack:
        targets = [
            stack.enter_context(_root(effect, i)) for i in range(len(effect.targets))
        ]
        _check(effect, targets)
        if checked is not None:
            checked()
        uppers = (
            [stack.enter_context(Root(u)) for u in effect.uppers] if effect.ops else []
        )
        applying = _Apply(effect, targets, uppers)
        try:
            applying.run()
        except BaseException as err:
            applying.drop_staged()  # first, so the directories made are empty
            if not applying.undo():
                raise EffectConflict(
                    f"{err}; undoing the part applied failed: some of the effect "
                    "may be applied (what it replaced is kept beside it)"
                ) from err
            raise
        finally:
            applying.clean()
        return applying.marks


def _check(effect: Effect, targets: list[Root]) -> None:
    for (layer, rel), was in effect.stamps.items():
        light = was is not None and len(was) == 3
        if stamp(targets[layer], rel, light) != was:
            raise EffectConflict(_waited(effect.path(layer, rel)))


def _waited(path: str, what: str = "changed") -> str:
    return f"{path} {what} while the command's effect waited; nothing applied"


def _safe(mode: int) -> int:
    """Return a file's mode without set-uid/gid: the owner applying it (root in
    a root-owned layer) never hands its identity to what a command wrote."""
    return stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID)


def _is_file(root: Root, rel: str) -> bool:
    st = root.lstat(rel)
    return st is not None and stat.S_ISREG(st.st_mode)


def _root(effect: Effect, layer: int) -> Root:
    try:
        return Root(effect.targets[layer])
    except OSError:
        raise EffectConflict(_waited(effect.targets[layer])) from None


class _Apply:
    """One application: stage, then commit, keeping how to undo each step."""

    def __init__(self, effect: Effect, targets: list[Root], uppers: list[Root]):
        self.effect, self.targets, self.uppers = effect, targets, uppers
        self.owners = [root.owner for root in targets]
        self.token = uuid.uuid4().hex[:8]
        self.staged: dict[tuple[int, str], str] = {}
        self.cleared: set[tuple[int, str]] = set()
        self.removed = {(op[1], op[2]) for op in effect.ops if op[0] == "remove"}
        self.steps: list[tuple[int, Callable[[], None]]] = []
        self.trash: list[tuple[int, str]] = []
        self.marks: dict[str, list | None] = {}

    def run(self) -> None:
        for op in self.effect.ops:
            if op[0] == "mkdir":
                self._guarded(op, self._mkdir)
            elif op[0] == "copy":
                self._guarded(op, self._stage)
        for op in self.effect.ops:
            self._guarded(op, self._commit)

    def _guarded(self, op: tuple, action) -> None:
        path = self.effect.path(op[1], op[2])
        try:
            with as_owner(*self.owners[op[1]]):
                action(op)
        except (NotBeneath, FileNotFoundError):
            raise EffectConflict(_waited(path)) from None
        except FileExistsError:
            raise EffectConflict(_waited(path, "appeared")) from None
        except OSError as err:
            uid = self.owners[op[1]][0]
            raise OSError(
                err.errno, f"{path}: {err.strerror} (applied as uid {uid})"
            ) from None

    def _aside(self, layer: int, rel: str) -> str:
        head, _, name = rel.rpartition("/")
        aside = f".{name}.{self.token}{STAGE_SUFFIX}"
        return f"{head}/{aside}" if head else aside

    def _mkdir(self, op: tuple) -> None:
        _, layer, rel, mode = op
        root = self.targets[layer]
        if (layer, rel) in self.removed and root.lstat(rel) is not None:
            # What the directory replaces goes aside now (its removal was asked).
            self._remove(layer, rel)
            self.cleared.add((layer, rel))
        root.mkdir(rel, mode)
        self._did(layer, lambda: root.rmdir(rel))

    def _stage(self, op: tuple) -> None:
        layer, rel = op[1], op[2]
        up = self.uppers[layer]
        with as_owner(0, 0):  # the scratch is root's: read it as root
            src = up.open(rel, os.O_RDONLY)
        try:
            st = os.fstat(src)
            tmp = self._aside(layer, rel)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            dst = self.targets[layer].open(tmp, flags, 0o600)
            self.staged[(layer, rel)] = tmp
            try:
                digest = hashlib.sha256() if st.st_size <= MARK_MAX_BYTES else None
                copy_sparse(src, dst, st.st_size, digest)
                os.fchmod(dst, _safe(st.st_mode))
                os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
                ino = os.fstat(dst).st_ino
            finally:
                os.close(dst)
        finally:
            os.close(src)
        mark = [digest.hexdigest(), st.st_size, ino] if digest else None
        self.marks[self.effect.path(layer, rel)] = mark

    def _commit(self, op: tuple) -> None:
        kind, layer, rel = op[:3]
        root = self.targets[layer]
        if kind == "remove" and (layer, rel) not in self.cleared:
            self._remove(layer, rel)
        elif kind == "copy":
            self._rename_in(layer, self.staged[(layer, rel)], rel, op[3])
            del self.staged[(layer, rel)]
        elif kind == "link":
            tmp = self._aside(layer, rel)
            root.link(op[4], tmp)
            self._rename_in(layer, tmp, rel, op[3])
        elif kind == "symlink":
            root.symlink(op[3], rel)
            self._did(layer, lambda: root.unlink(rel))
        elif kind == "chmod":
            old = stat.S_IMODE(root.lstat(rel).st_mode)
            root.chmod(rel, _safe(op[3]) if _is_file(root, rel) else op[3])
            self._did(layer, lambda: root.chmod(rel, old))
        elif kind == "utime":
            root.utime(rel, op[3], op[4])

    def _rename_in(self, layer: int, tmp: str, rel: str, overwrite: bool) -> None:
        root = self.targets[layer]
        if not overwrite:
            root.rename(tmp, rel, RENAME_NOREPLACE)
            self._did(layer, lambda: root.unlink(rel))
            return
        # The old file is swapped to the staged name: undone by swapping back.
        root.rename(tmp, rel, RENAME_EXCHANGE)
        self._did(layer, lambda: root.rename(tmp, rel, RENAME_EXCHANGE))
        self.trash.append((layer, tmp))

    def _remove(self, layer: int, rel: str) -> None:
        root, aside = self.targets[layer], self._aside(layer, rel)
        try:
            root.rename(rel, aside, RENAME_NOREPLACE)
        except FileNotFoundError:
            return  # already gone: what was asked is done
        self._did(layer, lambda: root.rename(aside, rel, RENAME_NOREPLACE))
        self.trash.append((layer, aside))

    def _did(self, layer: int, undo: Callable[[], None]) -> None:
        self.steps.append((layer, undo))

    def undo(self) -> bool:
        """Undo what the pass did, the last step first; return True when all was."""
        undone = True
        for layer, step in reversed(self.steps):
            try:
                with as_owner(*self.owners[layer]):
                    step()
            except OSError:
                # What was moved aside stays there rather than be lost.
                self.trash.clear()
                undone = False
        return undone

    def drop_staged(self) -> None:
        """Remove the staged files not renamed in."""
        self._remove_all([(layer, tmp) for (layer, _), tmp in self.staged.items()])
        self.staged.clear()

    def clean(self) -> None:
        """Remove what was moved aside and any staged file left over."""
        self.drop_staged()
        self._remove_all(self.trash)

    def _remove_all(self, names: list[tuple[int, str]]) -> None:
        for layer, rel in names:
            try:
                with as_owner(*self.owners[layer]):
                    self.targets[layer].unlink(rel)
            except OSError:
                continue
