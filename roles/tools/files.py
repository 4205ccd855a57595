"""File tools confined to the workspace and the allowed paths.

A path is resolved (``~`` expanded, relative paths taken from the workspace,
symlinks followed) and must then lie inside one of the roots; ``..`` and
symlinks that lead out are refused with a message naming where they lead.
``read_text`` and ``write_text`` (``roles.tools.fileio``) then reach the
resolved path beneath its root: a symlink swapped in on its way is refused.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from roles.tools.access import OPEN, READ, SEARCH, Access
from roles.tools.errors import ToolError
from roles.tools.fileio import READ_LIMIT, read_text, write_text
from roles.tools.holding import SCAN_LIMIT, is_hidden, lines_holding, shown

__all__ = [
    "GLOB_LIMIT",
    "READ_LIMIT",
    "glob_files",
    "namesakes",
    "not_found",
    "read_text",
    "resolve_confined",
    "write_text",
]

# A "**" pattern over a huge tree stops scanning at SCAN_LIMIT; the count says
# "more".
GLOB_LIMIT = 500
# A missing file's error names up to NEAR_LIMIT files of its name, NEAR_DEPTH
# levels below the nearest existing directory.
NEAR_LIMIT = 3
NEAR_DEPTH = 4


def resolve_confined(path: str, workspace: Path, roots: Sequence[Path]) -> Path:
    """Return ``path`` resolved, or raise ToolError when it leaves the roots."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in path:
        raise ToolError("path must not contain NUL characters")
    candidate = Path(os.path.expanduser(path.strip()))
    if not candidate.is_absolute():
        candidate = workspace / candidate
    resolved = candidate.resolve()
    if any(resolved.is_relative_to(root) for root in roots):
        return resolved
    allowed = ", ".join(str(r) for r in roots)
    raise ToolError(
        f"path {path!r} resolves to {resolved}, outside the workspace and allowed "
        f"paths ({allowed}); use a path inside them"
    )


def glob_files(
    pattern: str,
    root: str,
    *,
    workspace: Path,
    roots: Sequence[Path],
    hidden: Sequence[Path] = (),
    limit: int = GLOB_LIMIT,
    access: Access = OPEN,
) -> str:
    """Return the paths matching ``pattern`` (``**`` recurses) under ``root``,
    leaving out what lies in directories ``access`` may not list."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError("pattern must be a non-empty string")
    if os.path.isabs(pattern) or ".." in Path(pattern).parts:
        raise ToolError(
            f"pattern {pattern!r} must be relative without '..'; "
            "pass the directory to search as root"
        )
    base = resolve_confined(root or ".", workspace, roots)
    if not base.is_dir():
        raise ToolError(f"root {root!r} is not a directory")
    access.check(base, READ | SEARCH)
    listable = access.lister(base)
    matches: list[Path] = []
    for match in base.glob(pattern):
        # A symlink inside the tree may point out of it: never list such targets.
        real = match.resolve()
        if (
            any(real.is_relative_to(r) for r in roots)
            and not is_hidden(real, workspace, hidden)
            and listable(match)
        ):
            matches.append(match)
        if len(matches) >= SCAN_LIMIT:
            break
    matches.sort()
    found = [shown(m, workspace) for m in matches[:limit]]
    extra = len(matches) - len(found)
    if not found:
        said = (
            f"(no files matched pattern {pattern} under {base}; glob matches file names"
        )
        word = _stem(Path(pattern).name.translate(str.maketrans("", "", "*?[]")))
        lines = lines_holding(
            word, base, workspace=workspace, hidden=hidden, access=access
        )
        if lines:
            return f"{said}. Lines under {base} that hold {word!r}:\n" + "\n".join(
                [*lines, ")"]
            )
        return f"{said}: to find a word inside files, grep -rln 'WORD' DIR)"
    if extra:
        more = f"{extra}+" if len(matches) >= SCAN_LIMIT else str(extra)
        found.append(f"[… {more} more matches not shown; narrow the pattern]")
    return "\n".join(found)


def not_found(
    path: Path,
    *,
    workspace: Path,
    roots: Sequence[Path],
    hidden: Sequence[Path] = (),
    depth: int = NEAR_DEPTH,
    access: Access = OPEN,
    guess: bool = True,
) -> str:
    """Return "no such file" for ``path``, naming files of the same name nearby.

    A task often names a file where it is not ("settings.ini" that lives in
    conf/): like a shell's "did you mean", the error lists up to ``NEAR_LIMIT``
    files of that name under the nearest existing directory above it, inside
    the roots and at most ``depth`` levels down, so the next call can read one.
    When there is none, it names the files of that stem with another extension
    (``config.yml`` for ``config.yaml``), else it says how to find the file that
    holds the name's stem (a small model guesses ``normalize_sku.py`` for a
    function's file); without ``guess``, it names files only. Nothing closed to
    ``access`` is named or quoted.
    """
    message = f"no such file: {path}"
    base = path.parent
    while not base.is_dir() and base != base.parent:
        base = base.parent
    if not any(base.is_relative_to(root) for root in roots):
        return message
    if access.closed(base, READ | SEARCH) is not None:
        return message
    found, alike = namesakes(
        path.name, base, workspace=workspace, hidden=hidden, depth=depth, access=access
    )
    if not found and alike:
        named = ", ".join(shown(f, workspace) for f in alike[:NEAR_LIMIT])
        return (
            f"{message} (no file named {path.name!r} under {base}; files of the "
            f"same name with another extension: {named})"
        )
    if not found and not guess:
        return message
    if not found:
        # A guessed file name is often what the file holds (a function, a key).
        lines = lines_holding(
            _stem(path.name), base, workspace=workspace, hidden=hidden, access=access
        )
        if lines:
            held = "; ".join(lines)
            return (
                f"{message} (no file named {path.name!r} under {base}; lines "
                f"under {base} that hold {_stem(path.name)!r}: {held})"
            )
        word, where = shlex.quote(path.stem), shlex.quote(str(base))
        hint = f"to find the file that holds a word: grep -rln {word} {where}"
        return f"{message} (no file named {path.name!r} under {base}; {hint})"
    named = ", ".join(shown(f, workspace) for f in found)
    return f"{message}; files named {path.name!r} under {base}: {named}"


def namesakes(
    name: str,
    base: Path,
    *,
    workspace: Path,
    hidden: Sequence[Path] = (),
    depth: int = NEAR_DEPTH,
    access: Access = OPEN,
) -> tuple[list[Path], list[Path]]:
    """Return the files called ``name`` under ``base`` (up to ``NEAR_LIMIT``)
    and those of its stem with another extension, ``depth`` levels down at most,
    leaving out hidden paths and what ``access`` may not list."""
    found: list[Path] = []
    alike: list[Path] = []
    stem, seen = _stem(name).lower(), 0
    for folder, dirs, names in os.walk(base):
        here = Path(folder)
        seen += len(dirs) + len(names)
        if len(here.relative_to(base).parts) >= depth:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if access.allows(here / d, READ | SEARCH))
        for other in sorted(names):
            if other != name and _stem(other).lower() != stem:
                continue
            match = here / other
            if not is_hidden(match.resolve(), workspace, hidden):
                (found if other == name else alike).append(match)
        if len(found) >= NEAR_LIMIT or seen >= SCAN_LIMIT:
            break
    return found, alike


def _stem(name: str) -> str:
    return name.split(".", 1)[0]
