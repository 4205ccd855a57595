"""The file tools that write: ``write_file``, ``create_file`` and ``apply_edit``.

All three take one road (``Writes.call``): the path resolved and confined
(``FileTools.path``, checked before by ``FileTools.check``), the new text
planned from the file as it is, Law 1's question (``Law1.gate``) when the call
changes a file that was there before and that the run did not write itself,
with the unified diff of the change, and the write beneath the path's root as
its owner (``fileio.write_text``). ``create_file`` refuses a path that exists,
and its write refuses one that appeared meanwhile. ``apply_edit`` replaces
exactly one occurrence of ``old``: none or several is an error naming the
count and the lines the model meant, and nothing is written::

    apply_edit {"path": "app.ini", "old": "port = 80", "new": "port = 8080"}
    # replaced 1 occurrence at line 3; wrote 41 bytes to /w/app.ini
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from roles.tools import fileio
from roles.tools.access import READ
from roles.tools.effect import Change
from roles.tools.effect_read import DIFF_MAX_BYTES, unified
from roles.tools.errors import ToolError
from roles.tools.filetools import FileTools
from roles.tools.law1 import Law1
from roles.tools.leftovers import Spoiled

# A file apply_edit reads whole and rewrites; a bigger one is the shell's.
EDIT_MAX_BYTES = 1 << 20
NEAR_LINES = 3
NEAR_CHARS = 200
# A line as read_file_lines shows it, copied into old with its number.
NUMBERED = re.compile(r"^L\d+: ")


class Writes:
    """Run the writing file tools of one toolbox."""

    def __init__(self, files: FileTools, law1: Law1, spoiled: Spoiled):
        self.files = files
        self.law1 = law1
        self.spoiled = spoiled

    def call(self, name: str, args: dict) -> str:
        """Plan the call's text, ask Law 1 when it changes a file, then write."""
        path = self.files.path(args["path"])
        before = self._before(name, path)
        after, said = planned(name, args, before, path)
        changes = () if before is None else (change(path, before, after),)
        denied = self.law1.gate(name, args, changes)
        if denied:
            return denied
        if name == "apply_edit" and self._text(path) != before:
            raise ToolError(
                f"{path} changed while the edit waited for approval; nothing was "
                "written: read it again"
            )
        return said + self.write(path, after, create=name == "create_file")

    def write(self, path: Path, content: str, *, create: bool = False) -> str:
        """Write ``content`` to ``path``, marking it the run's own when the run
        made it or owned it."""
        made = self.law1.made
        own = made.is_own(str(path))
        # Written as the root's owner: later commands write it as that owner
        # too (their own uid in the workspace, an idmapped view elsewhere).
        output, mark, created = fileio.write_text(
            path, content, roots=self.files.roots, create=create
        )
        self.spoiled.wrote(path)
        if created or own:
            made.wrote_file(str(path), mark)
        return output

    def _before(self, name: str, path: Path) -> str | None:
        """Return the text at ``path`` the call changes, None when there is none
        (or, for write_file, none to show)."""
        if name == "create_file":
            if os.path.lexists(path):
                raise ToolError(fileio.exists(path))
            return None
        if name == "apply_edit":
            return self._text(path)
        if not path.is_file() or self.files.access.closed(path, READ) is not None:
            return None
        try:
            return self._text(path, DIFF_MAX_BYTES)
        except ToolError:
            return None  # binary, too big or unreadable: asked without a diff

    def _text(self, path: Path, limit: int = EDIT_MAX_BYTES) -> str:
        """Return the whole UTF-8 text of ``path``, read beneath its root."""
        if not os.path.lexists(path):
            raise ToolError(self.files.missing(path))
        with fileio.open_file(path, self.files.roots, "apply_edit") as handle:
            try:
                data = handle.read(limit + 1)
            except OSError as err:
                raise ToolError(f"cannot read {path}: {err.strerror or err}") from None
        if len(data) > limit:
            raise ToolError(
                f"{path} is over {limit >> 10} KiB; apply_edit edits smaller files "
                "(use the shell: sed -i)"
            )
        if b"\x00" in data[:8192]:
            raise ToolError(f"{path} looks like a binary file; apply_edit edits text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"{path} is not UTF-8 text; apply_edit edits text"
            ) from None


def planned(name: str, args: dict, before: str | None, path: Path) -> tuple[str, str]:
    """Return the text the call writes and what its result says first."""
    if name != "apply_edit":
        return args["content"], ""
    old, new = args["old"], args["new"]
    if not old:
        raise ToolError(
            "apply_edit needs the text to replace in old (to add text, put the "
            "line it follows in old and in new)"
        )
    if old == new:
        raise ToolError("apply_edit: old and new are the same; nothing to change")
    count, at = before.count(old), before.find(old)
    if count == 1 and before.find(old, at + 1) != -1:
        count = 2  # two occurrences that overlap ("aa" in "aaa")
    if count != 1:
        raise ToolError(not_once(before, old, count, path))
    line = before.count("\n", 0, at) + 1
    return before[:at] + new + before[at + len(old) :], (
        f"replaced 1 occurrence at line {line}; "
    )


def not_once(text: str, old: str, count: int, path: Path) -> str:
    """Return why ``old`` cannot be replaced: found ``count`` times (not once),
    with the lines it starts on, or else the lines most like its first line."""
    lines = text.splitlines()
    if count:
        numbers, at = [], text.find(old)
        while at != -1 and len(numbers) < NEAR_LINES + 2:
            numbers.append(text.count("\n", 0, at) + 1)
            at = text.find(old, at + 1)
        said = "It starts on these lines; put more of the text around it in old"
    else:
        first = next((s.strip() for s in old.splitlines() if s.strip()), old)
        numbers = _nearest(first, lines)
        said = "Copy old from the file exactly. The lines most like its first line"
        if NUMBERED.match(old):
            said = "Leave the 'L<n>: ' line numbers out of old. " + said
    rows = [f"L{n}: {lines[n - 1][:NEAR_CHARS]}" for n in numbers]
    held = "\n".join(rows) or "(none)"
    return (
        f"apply_edit: old was found {count} times in {path}; it must be found "
        f"exactly once, nothing was changed. {said}:\n{held}"
    )


def _nearest(first: str, lines: list[str]) -> list[int]:
    """Return the numbers of up to ``NEAR_LINES`` lines most like ``first``."""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(first)
    scored = []
    for number, line in enumerate(lines, start=1):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() >= 0.4 and matcher.quick_ratio() >= 0.4:
            scored.append((matcher.ratio(), -number))
    best = sorted(scored, reverse=True)[:NEAR_LINES]
    return sorted(-number for ratio, number in best if ratio >= 0.4)


def change(path: Path, before: str, after: str) -> dict:
    """Return the change as Law 1 shows it: sizes and the unified diff."""
    size_before, size_after = len(before.encode()), len(after.encode())
    diff = unified(before, after)
    return Change("overwritten", str(path), size_before, size_after, diff).as_dict()
