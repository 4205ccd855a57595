"""``read_file_lines``: a span of a text file's lines, numbered, within bounds.

The file is opened beneath its root as ``read_file`` opens it
(``fileio.open_file``) and read line by line, never whole: at most
``LINES_SPAN`` lines a call, each cut at ``LINE_CHARS`` characters, the output
at ``LINES_CHARS`` (what the model sees of a result whole), and nothing past
the first ``SCAN_BYTES``. Each line is ``L<n>: <text>``; the line numbers are
not bare numbers, so the evidence rules never take one for a value a tool
showed::

    [notes.txt: lines 2-3 of 5]
    L2: beta
    L3: gamma
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from roles.tools.errors import ToolError
from roles.tools.fileio import open_file

LINES_SPAN = 200
LINE_CHARS = 500
LINES_CHARS = 3500
SCAN_BYTES = 64 << 20
LINE_READ = LINE_CHARS * 4 + 1
CHUNK = 1 << 20
TOOL = "read_file_lines"


def line_number(args: dict, key: str) -> int:
    """Return the 1-based line number ``args[key]`` (an int or its digits)."""
    value = args.get(key)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{TOOL} needs {key} as a whole number, not {value!r}")
    if value < 1:
        raise ToolError(f"{TOOL}: {key} must be at least 1 (lines count from 1)")
    return value


def span(args: dict) -> tuple[int, int]:
    """Return the asked (start, end), refusing an end before the start."""
    start, end = line_number(args, "start"), line_number(args, "end")
    if end < start:
        raise ToolError(f"{TOOL}: end {end} is before start {start}")
    return start, end


def read_lines(path: Path, shown: str, start: int, end: int, roots=()) -> str:
    """Return lines ``start``..``end`` of ``path`` numbered, under a header
    that says the span shown and how many lines the file has."""
    last = min(end, start + LINES_SPAN - 1)
    with open_file(path, roots, TOOL) as handle:
        try:
            if b"\x00" in handle.read(8192):
                raise ToolError(f"{path} looks like a binary file; {TOOL} returns text")
            handle.seek(0)
            rows, number, ended = _take(handle, start, last)
            total, ended = (number, True) if ended else _count_rest(handle, number)
        except OSError as err:
            raise ToolError(f"cannot read {path}: {err.strerror or err}") from None
    return _shown(shown, start, end, rows, total, ended)


def _take(handle: IO[bytes], start: int, last: int) -> tuple[list[str], int, bool]:
    """Read lines up to ``last``; return the rows of ``start``..``last`` that
    fit ``LINES_CHARS``, the lines read and whether the file ended."""
    rows: list[str] = []
    number = size = 0
    while number < last and handle.tell() <= SCAN_BYTES:
        raw = handle.readline(LINE_READ)
        if not raw:
            return rows, number, True
        number += 1
        cut = len(raw) == LINE_READ and not raw.endswith(b"\n")
        while cut and handle.tell() <= SCAN_BYTES:
            rest = handle.readline(CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        if number < start:
            continue
        row = f"L{number}: {_text(raw, cut)}"
        if rows and size + len(row) + 1 > LINES_CHARS:
            return rows, number, False  # the rest is counted, not shown
        rows.append(row)
        size += len(row) + 1
    return rows, number, False


def _count_rest(handle: IO[bytes], number: int) -> tuple[int, bool]:
    """Return how many lines the file has, ``number`` read already, and
    whether it was read to its end within ``SCAN_BYTES``."""
    tail = b"\n"
    while handle.tell() <= SCAN_BYTES:
        chunk = handle.read(CHUNK)
        if not chunk:
            return number + (tail != b"\n"), True
        number += chunk.count(b"\n")
        tail = chunk[-1:]
    return number, False


def _shown(
    shown: str, start: int, end: int, rows: list[str], total: int, ended: bool
) -> str:
    of = f"of {total}" if ended else f"of more than {total}"
    if not rows:
        if not ended:
            raise ToolError(
                f"line {start} of {shown} lies past the first {SCAN_BYTES >> 20} MiB "
                f"{TOOL} reads; use the shell: sed -n '{start},{end}p' FILE"
            )
        raise ToolError(f"{shown} has {total} lines; start {start} is past its end")
    last = start + len(rows) - 1
    more = ""
    if last < end and (last < total or not ended):
        cap = f"{LINES_SPAN}-line" if len(rows) == LINES_SPAN else "output"
        more = f"; cut at the {cap} cap, read from line {last + 1} for more"
    return f"[{shown}: lines {start}-{last} {of}{more}]\n" + "\n".join(rows)


def _text(raw: bytes, cut: bool) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if len(text) > LINE_CHARS or cut:
        return text[:LINE_CHARS] + " […]"
    return text
