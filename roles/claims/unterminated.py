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

from collections.abc import Iterable, Sequence
from pathlib import Path

from roles.claims.command import parse_command
from roles.claims.evidence import parse_evidence, split_exit_code

__all__ = ["uncounted_last_line"]


def uncounted_last_line(numbers: Sequence[str], tool_calls: Iterable[str]) -> str:
    """Return why a claimed number that ``wc -l`` printed is one short, or ""."""
    for entry in tool_calls:
        call = parse_evidence(entry)
        if call is None or call.tool != "shell":
            continue
        command = str(call.args.get("command") or "")
        file = counted_file(command)
        code, output = split_exit_code(call.output)
        words = output.split()
        if not file or code != 0 or not words or words[0] not in numbers:
            continue
        if _ends_without_newline(Path(file)):
            count = int(words[0])
            return (
                f"the claimed {count} was printed by `{command}`, which counts "
                f"newlines: the last line of {file} has none, so the file has "
                f"{count + 1} lines; count every line with grep -c '' {file}"
            )
    return ""


def counted_file(command: str) -> str:
    """Return the one file whose newlines ``command`` counts (``wc -l FILE``,
    ``wc -l < FILE``, ``cat FILE | wc -l``), else "" (another command, more
    than that, several files)."""
    parsed = parse_command(command)
    if parsed.error or len(parsed.pipelines) != 1:
        return ""
    *feeders, wc = parsed.pipelines[0].programs
    if wc.name != "wc" or wc.flags != ("-l",) or wc.via or len(feeders) > 1:
        return ""
    files = [*wc.operands, *(r.target for r in wc.redirects if r.operator == "<")]
    if feeders:
        cat = feeders[0]
        if files or cat.name != "cat" or cat.flags or cat.redirects:
            return ""
        files = list(cat.operands)
    return files[0] if len(files) == 1 else ""


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
