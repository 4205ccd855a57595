"""What the sandbox's uid may do to a path, asked by the tools that run in the worker.

Shell commands run as an unprivileged uid, and the kernel refuses them what
that uid may not read, enter or write. ``read_file``, ``glob`` and
``write_file`` run in the worker itself: a worker running as root would read a
directory closed to that uid (``chmod 700``, root's own), and the not-found
hints that walk directories would name and quote files inside it. These tools
ask ``Access`` first, which judges a path by its mode bits as the kernel would
for the sandbox's uid (its own group, no supplementary groups), so a file is
closed to every tool alike.

In an allowed path of another owner a command acts as that owner (an idmapped
view, ``roles.tools.sandbox.writes_as``): there the owner's ids are judged.

ACLs are not read: a path only an ACL opens to the uid stays closed, the safe
side. A rootless worker runs as an ordinary user whose own rights the kernel
enforces, and a worker without a sandbox is trusted by the operator: both get
``OPEN``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from roles.tools.errors import ToolError

READ, WRITE, SEARCH = 4, 2, 1
# What each tool needs of the path itself (the directories above need SEARCH).
VERBS = {READ: "read", READ | SEARCH: "list", WRITE: "write"}


@dataclass(frozen=True)
class Access:
    """Judge paths for one uid; ``uid is None`` allows everything."""

    uid: int | None = None
    # The sandbox binds these into a tree of its own: what lies above them
    # is not on its way, and only they and what is below them are judged.
    roots: tuple[Path, ...] = ()
    # The ids the uid acts with under each root (its owner's where commands
    # see that owner's files as their own).
    owners: tuple[tuple[Path, tuple[int, int]], ...] = ()

    def acting(self, path: Path) -> tuple[int, int]:
        """Return the uid and gid judged at ``path`` (its root's owner's, where
        commands act as that owner)."""
        holding = [(r, ids) for r, ids in self.owners if Path(path).is_relative_to(r)]
        if not holding:
            return self.uid, self.uid  # the sandbox's gid is its uid
        return max(holding, key=lambda item: len(item[0].parts))[1]

    def allows(self, path: Path, want: int) -> bool:
        """Return True when the uid has ``want`` on ``path`` itself."""
        if self.uid is None:
            return True
        try:
            st = os.stat(path)
        except OSError:
            return False
        mode = stat.S_IMODE(st.st_mode)
        uid, gid = self.acting(path)
        if st.st_uid == uid:
            bits = mode >> 6
        elif st.st_gid == gid:
            bits = mode >> 3
        else:
            bits = mode
        return bits & want == want

    def closed(self, path: Path, want: int) -> Path | None:
        """Return the first path on the way to ``path`` the uid may not pass.

        Every directory above ``path`` must be searchable and ``path`` itself
        needs ``want``. A path that does not exist yet is judged at its nearest
        existing directory: searchable, and writable when ``want`` is a write
        (the file is made there). None when all is open.
        """
        if self.uid is None:
            return None
        path = Path(path)
        target, need = path, want
        if not os.path.lexists(path):
            target, need = path.parent, (WRITE | SEARCH if want & WRITE else SEARCH)
            while not os.path.lexists(target) and target != target.parent:
                target = target.parent
        for above in reversed(target.parents):
            if self._bound(above) and not self.allows(above, SEARCH):
                return above
        return None if self.allows(target, need) else target

    def _bound(self, folder: Path) -> bool:
        """Return True when ``folder`` is a root or lies below one."""
        return not self.roots or any(folder.is_relative_to(r) for r in self.roots)

    def lister(self, base: Path):
        """Return a test: may the uid list every directory from ``base`` (already
        checked) down to a path's own?"""
        known: dict[Path, bool] = {Path(base): True}

        def opens(folder: Path) -> bool:
            if folder not in known:
                known[folder] = (
                    folder != folder.parent
                    and opens(folder.parent)
                    and self.allows(folder, READ | SEARCH)
                )
            return known[folder]

        return lambda path: self.uid is None or opens(Path(path).parent)

    def check(self, path: Path, want: int) -> None:
        """Raise ToolError, worded as the shell's refusal, when ``path`` is closed."""
        blocked = self.closed(path, want)
        if blocked is None:
            return
        verb = VERBS.get(want, "use")
        where = "" if blocked == path else f" ({blocked} is closed to it)"
        raise ToolError(
            f"permission denied: {path}: the run's user may not {verb} it{where}"
        )


OPEN = Access()


def for_policy(policy, roots: tuple[Path, ...] = ()) -> Access:
    """Return the Access of a sandbox policy's uid under ``roots``: OPEN without
    a policy or when rootless (the kernel holds the worker to its own uid)."""
    if policy is None or policy.rootless:
        return OPEN
    owners = []
    for root in map(Path, roots):
        try:
            st = root.stat()
        except OSError:
            continue
        # The innermost root decides: a workspace inside an allowed path of
        # another owner is the sandbox's own, written with its own ids.
        mapped = st.st_uid != policy.uid
        owners.append((root, (st.st_uid, st.st_gid) if mapped else (policy.uid,) * 2))
    return Access(policy.uid, tuple(Path(r) for r in roots), tuple(owners))
