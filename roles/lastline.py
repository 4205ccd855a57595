"""A count by ``wc -l`` misses a last line that has no newline after it.

``wc -l`` counts newline characters, so a file whose last line ends without one
has one line more than it prints: ``printf 'a\nb' | wc -l`` prints 1. When a
claimed number is what ``wc -l FILE`` (or ``cat FILE | wc -l``, ``wc -l <
FILE``) printed and that file's last byte is not a newline, the claim is one
short, and R4a names a command that counts every line::

    uncounted_last_line(["56"], calls)
    # "the claimed 56 was printed by `wc -l /d/guests.txt`, which counts
    #  newlines: the last line of /d/guests.txt has none, so the file has 57
    #  lines; count every line with grep -c '' /d/guests.txt"
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from roles.evidence import parse_evidence, split_exit_code

__all__ = ["uncounted_last_line"]

PATH = r"""'[^']+'|"[^"]+"|[^\s|;&<>'"]+"""
WC_LINES = re.compile(
    rf"^\s*(?:wc\s+-l\s+(?:<\s*)?(?P<file>{PATH})"
    rf"|cat\s+(?P<cat>{PATH})\s*\|\s*wc\s+-l)\s*$"
)


def uncounted_last_line(numbers: Sequence[str], tool_calls: Iterable[str]) -> str:
    """Return why a claimed number that ``wc -l`` printed is one short, or ""."""
    for entry in tool_calls:
        call = parse_evidence(entry)
        if call is None or call.tool != "shell":
            continue
        command = str(call.args.get("command") or "")
        match = WC_LINES.match(command)
        code, output = split_exit_code(call.output)
        words = output.split()
        if match is None or code != 0 or not words or words[0] not in numbers:
            continue
        file = shlex.split(match["file"] or match["cat"])[0]
        if _ends_without_newline(Path(file)):
            count = int(words[0])
            return (
                f"the claimed {count} was printed by `{command}`, which counts "
                f"newlines: the last line of {file} has none, so the file has "
                f"{count + 1} lines; count every line with grep -c '' {file}"
            )
    return ""


def _ends_without_newline(path: Path) -> bool:
    if not path.is_absolute():
        return False
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            if handle.tell() == 0:
                return False
            handle.seek(-1, 2)
            return handle.read(1) != b"\n"
    except OSError:
        return False
