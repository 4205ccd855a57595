"""What a tool call writes: the paths a file tool or a shell command changes.

Read from the parsed command (``roles.claims.command``), never from its text
by pattern: a redirection's target, the operands of the programs that write
their operands (``touch``, ``mv``, ``sed -i``, ``tee`` …), a ``cp``'s
destination, an archive's file::

    written_paths(ToolCall("shell", {"command": "cd /srv && sed -i s/a/b/ x.ini"}))
    # ["/srv/x.ini"]

An operand with an expansion (``"$f"`` in a loop) may be any path the command
names, so those are counted; a relative operand is joined to the directory a
``cd`` before it went to. An interpreter running a script (``python3 s.py``)
may write anywhere it names: the absolute paths of its command line count.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from roles.claims.command import Program, parse_command
from roles.claims.evidence import ToolCall, is_failed_call

__all__ = ["may_write", "written", "written_paths"]

# Programs that change every operand they are given.
EACH = frozenset(
    "touch mkdir rm rmdir unlink shred truncate chmod chown chgrp rename mmv "
    "gzip gunzip bzip2 bunzip2 xz unxz zstd tee mv".split()
)
# Programs whose last operand is what they write.
LAST = frozenset("cp install ln rsync scp".split())
INTERPRETERS = frozenset(
    "python python3 perl ruby node sh bash dash zsh php Rscript".split()
)
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "1>", "1>>", "2>", "2>>"})
ABSOLUTE = re.compile(r"""(?<![\w.~])/[^\s'"`,;()<>|$*?]+""")
FILE_TOOLS = ("write_file", "create_file", "apply_edit", "edit_file")
# What a call of these tools does is read, whatever its arguments.
READ_TOOLS = frozenset({"read_file", "read_file_lines", "glob", "search", "fetch_url"})
# Programs that change nothing when they write to no file (a redirect and
# sort -o are read apart by ``_writes``, find's actions by FIND_ACTIONS; the
# parser names the program a wrapper such as env or sudo runs).
READ_ONLY = frozenset(
    "cat tac nl head tail sort uniq cut paste wc tr column less more grep egrep "
    "fgrep rg awk gawk mawk ls find tree stat file du df diff cmp md5sum "
    "sha256sum jq echo printf pwd cd test [ true false which type basename "
    "dirname realpath readlink date id whoami hostname uname env printenv "
    "sleep seq xxd od hexdump strings zcat".split()
)
FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint"})


def written_paths(call: ToolCall) -> list[str]:
    """Return the paths ``call`` writes (absolute where the call says where)."""
    if call.tool in FILE_TOOLS:
        path = call.args.get("path")
        return [path] if isinstance(path, str) and path else []
    if call.tool != "shell":
        return []
    text = call.args.get("command")
    if not isinstance(text, str):
        return []
    named = [p.rstrip(".:") for p in ABSOLUTE.findall(text)]
    cwd = ""
    written: list[str] = []
    for pipeline in parse_command(text).pipelines:
        for program in pipeline.programs:
            if program.name == "cd" and program.operands:
                cwd = _joined(cwd, program.operands[0])
                continue
            for word in _writes(program):
                if "$" in word or "`" in word:
                    written += named
                else:
                    written.append(_joined(cwd, word))
            if program.name in INTERPRETERS and program.operands:
                written += named
    return list(dict.fromkeys(p for p in written if p))


def _writes(program: Program) -> list[str]:
    words = [r.target for r in program.redirects if r.operator in WRITE_REDIRECTS]
    name, operands = program.name, list(program.operands)
    if name in EACH:
        words += operands
    elif name in LAST and operands:
        words.append(program.flag("-t", "--target-directory") or operands[-1])
    elif name in ("sed", "perl") and program.flag("-i", "--in-place") is not None:
        words += operands[1:] if name == "sed" and not program.flag("-e") else operands
    elif name == "sort" and program.flag("-o", "--output"):
        words.append(program.flag("-o", "--output") or "")
    elif name == "tar" and program.flag("-f", "--file") is not None:
        # An archive's file, its value attached or (combined flags) the first
        # operand; what it extracts lands in the -C directory.
        words.append(program.flag("-f", "--file") or (operands or [""])[0])
        if program.flag("-x", "--extract") is not None:
            words.append(program.flag("-C", "--directory") or "")
    elif name in ("zip", "7z") and operands:
        words.append(operands[1] if name == "7z" and len(operands) > 1 else operands[0])
    elif name == "dd":
        words += [w[3:] for w in operands if w.startswith("of=")]
    elif name == "find" and ("-delete" in program.flags):
        words += operands[:1]
    return [w for w in words if w and not w.startswith("&")]


def _joined(cwd: str, path: str) -> str:
    if path.startswith("/") or not cwd:
        return posixpath.normpath(path) if path.startswith("/") else path
    return posixpath.normpath(posixpath.join(cwd, path))


def may_write(call: ToolCall) -> bool:
    """Return True when ``call`` succeeded and may have changed a file: a
    file tool's write, a command that writes a path (``written_paths``), or
    one that runs any program not known to only read. An awk program that
    prints to a file of its own is counted as a reader."""
    if is_failed_call(call) or call.tool in READ_TOOLS:
        return False
    command = call.args.get("command")
    if call.tool != "shell" or not isinstance(command, str):
        return True
    if written_paths(call):
        return True
    parsed = parse_command(command)
    if parsed.error or not parsed.pipelines:
        return True
    return any(
        program.name not in READ_ONLY
        or (program.name == "find" and FIND_ACTIONS & set(program.flags))
        for pipeline in parsed.pipelines
        for program in pipeline.programs
    )


def written(calls: Sequence[ToolCall]) -> list[str]:
    """Return the paths the successful ``calls`` wrote; a script a call wrote
    and a later one ran writes the absolute paths its text names."""
    paths: list[str] = []
    scripts: dict[str, str] = {}
    for call in calls:
        if is_failed_call(call):
            continue
        content = call.args.get("content")
        if call.tool != "shell" and isinstance(content, str):
            scripts[str(call.args.get("path", ""))] = content
        paths += written_paths(call)
        command = call.args.get("command") if call.tool == "shell" else None
        if isinstance(command, str):
            paths += [
                p
                for script, text in scripts.items()
                if script and posixpath.basename(script) in command
                for p in ABSOLUTE.findall(text)
            ]
    return paths
