"""Lines that hold a word, for the hints of a file tool's empty answer.

A file name guessed from what the file holds (``normalize_sku.py`` for a
function) is answered with up to ``HOLD_LIMIT`` lines under the directory that
hold its stem, read from the first ``HOLD_BYTES`` of each regular text file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from roles.tools.access import OPEN, READ, SEARCH, Access

HOLD_LIMIT = 8
HOLD_BYTES = 256_000
HOLD_WORD = re.compile(r"[A-Za-z_]\w{3,}")
# Every walk of the file tools (this one, glob's, a missing file's) stops after
# this many entries.
SCAN_LIMIT = 20_000


def lines_holding(
    word: str,
    base: Path,
    *,
    workspace: Path,
    hidden: Sequence[Path] = (),
    limit: int = HOLD_LIMIT,
    access: Access = OPEN,
) -> list[str]:
    """Return up to ``limit`` ``path:line: text`` entries of the text files under
    ``base`` whose line holds ``word`` as a whole word; [] for a short word.

    Hidden directories (``.git``), links, fifos, binary files and what
    ``access`` may not read are skipped, and the walk stops after
    ``SCAN_LIMIT`` entries.
    """
    if not HOLD_WORD.fullmatch(word or ""):
        return []
    if access.closed(base, READ | SEARCH) is not None:
        return []
    pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)")
    found: list[str] = []
    seen = 0
    for folder, dirs, names in os.walk(base):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and access.allows(here / d, READ | SEARCH)
        )
        for name in sorted(names):
            seen += 1
            path = here / name
            if seen > SCAN_LIMIT or len(found) >= limit:
                return found[:limit]
            if not access.allows(path, READ):
                continue
            text = _text_head(path, workspace, hidden)
            for number, line in enumerate(text.splitlines(), 1):
                if pattern.search(line):
                    found.append(
                        f"{shown(path, workspace)}:{number}: {line.strip()[:160]}"
                    )
    return found[:limit]


def _text_head(path: Path, workspace: Path, hidden: Sequence[Path]) -> str:
    """Return the head of a regular text file, "" for anything else."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return ""
        if is_hidden(path.resolve(), workspace, hidden):
            return ""
        with path.open("rb") as handle:
            data = handle.read(HOLD_BYTES)
    except OSError:
        return ""
    if b"\0" in data[:1024]:
        return ""
    return data.decode("utf-8", errors="replace")


def is_hidden(path: Path, workspace: Path, hidden: Sequence[Path]) -> bool:
    """Return True for a hidden path outside the workspace."""
    if path.is_relative_to(workspace):
        return False
    return any(path.is_relative_to(h) for h in hidden)


def shown(path: Path, workspace: Path) -> str:
    """Return a path as a tool shows it: relative inside the workspace."""
    if path.is_relative_to(workspace):
        return str(path.relative_to(workspace))
    return str(path)
