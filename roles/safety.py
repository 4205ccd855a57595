"""Law 1: recognise tool calls that destroy or overwrite user data.

``check_shell`` and ``check_write`` return the reason a call needs the operator's
approval, or None when it is harmless. They never run anything; whether a file
exists is asked of an injectable ``exists`` callable, so tests use real files in a
temporary directory. A path ``p`` is a directory when ``exists(p + "/")`` holds,
which is what ``os.path.exists`` answers on POSIX.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

Exists = Callable[[str], bool]

# A lone "&" (background) separates commands too; "2>&1" and "&>" do not.
_SEPARATOR = re.compile(r"&&|\|\||;|\||\n|\$\(|`|(?<![<>])&(?!>)")
# Command substitution runs even inside double quotes.
_SUBSTITUTION = re.compile(r"\$\(|`")
_PREFIXES = frozenset(
    {"sudo", "command", "then", "do", "else", "if", "while", "until", "!", "exec"}
    | {"nohup", "time", "nice", "env", "{", "("}
)
# Wrappers that run the next word as a command, with their options taking a value.
# "command" is not among them: "command -v rm" only prints where rm lives.
_WRAPPER_OPTIONS_WITH_ARG = {
    "sudo": frozenset({"-u", "-g", "-C", "-h", "-p", "-U"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "nice": frozenset({"-n"}),
    "exec": frozenset({"-a"}),
}
_XARGS_OPTIONS_WITH_ARG = frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"})
_GIT_OPTIONS_WITH_ARG = frozenset({"-C", "-c", "--git-dir", "--work-tree"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_HARMLESS_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PROGRAM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_SIMPLE = {
    "rm": "rm deletes files permanently",
    "rmdir": "rmdir removes directories permanently",
    "unlink": "unlink deletes a file permanently",
    "truncate": "truncate destroys file contents",
    "shred": "shred irrecoverably destroys files",
    "fdisk": "fdisk modifies disk partition table",
}


def check_shell(
    command: str, *, exists: Exists = os.path.exists, cwd: str | None = None
) -> str | None:
    """Return the Law 1 reason to gate a shell command, or None if harmless."""
    if not isinstance(command, str):
        raise TypeError(f"command must be a str, not {type(command).__name__}")
    for fragment in _fragments(command):
        reason = _check_words(_words(fragment), exists, cwd)
        if reason:
            return reason
    return _check_redirections(command, exists, cwd)


def programs(command: str) -> list[str]:
    """Return the programs ``command`` runs, in order, once each.

    Each simple command of a list, a pipeline or a substitution counts, after
    wrappers such as ``sudo`` or ``env`` and variable assignments; ``bash -c``
    is one program, not a look inside its script.
    """
    names: list[str] = []
    for fragment in _fragments(command):
        words = _strip_prefixes(_words(fragment))
        name = _program(words[0]) if words else ""
        if _PROGRAM_NAME.match(name) and name not in names:
            names.append(name)
    return names


def check_write(
    path: str,
    *,
    exists: Exists = os.path.exists,
    cwd: str | None = None,
    tool: str = "write_file",
) -> str | None:
    """Return the Law 1 reason to gate a file tool's write onto ``path``
    (``apply_edit`` changes the file, the others overwrite it), or None."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{tool} needs a non-empty path")
    if _is_existing_file(path, exists, cwd):
        verb = "change" if tool == "apply_edit" else "overwrite"
        return f"{tool} would {verb} existing file: {path}"
    return None


def _fragments(command: str) -> list[str]:
    """Split on unquoted separators (and on substitutions outside single quotes)."""
    fragments, start, quote, index = [], 0, "", 0
    while index < len(command):
        char = command[index]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            index += 2
            continue
        elif quote == '"' and char == '"':
            quote = ""
        elif char in "'\"" and not quote:
            quote = char
        else:
            pattern = _SUBSTITUTION if quote else _SEPARATOR
            match = pattern.match(command, index)
            if match:
                fragments.append(command[start:index])
                start = index = match.end()
                continue
        index += 1
    fragments.append(command[start:])
    return fragments


def _words(fragment: str) -> list[str]:
    try:
        return shlex.split(fragment)
    except ValueError:
        # Unbalanced quotes or a trailing backslash: judge the plain words.
        return fragment.split()


def _strip_prefixes(words: list[str]) -> list[str]:
    words = list(words)
    while words:
        head = words[0]
        if head[:1] in "({" and len(head) > 1:
            words[0] = head.lstrip("({")
        elif head in _PREFIXES or _ASSIGNMENT.match(head):
            words = words[1:]
            if head in _WRAPPER_OPTIONS_WITH_ARG:
                words = _skip_options(words, _WRAPPER_OPTIONS_WITH_ARG[head])
        else:
            break
    return words


def _skip_options(words: list[str], with_arg: frozenset[str]) -> list[str]:
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in with_arg else 1
    return words[index:]


def _program(word: str) -> str:
    return os.path.basename(word.lstrip("\\")) if word else ""


def _check_words(words: list[str], exists: Exists, cwd: str | None) -> str | None:
    words = _strip_prefixes(words)
    if not words:
        return None
    name, args = _program(words[0]), words[1:]
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name == "mkfs" or name.startswith("mkfs."):
        return "mkfs formats a filesystem, destroying all data"
    if name == "dd" and any(arg.startswith("of=") for arg in args):
        return "dd with of= overwrites a device or file"
    checks = {
        "find": _check_find,
        "xargs": _check_xargs,
        "git": _check_git,
        "mv": _check_move,
        "cp": _check_move,
        "tee": _check_tee,
    }
    if name in checks:
        return checks[name](name, args, exists, cwd)
    if name in _SHELLS and "-c" in args[:-1]:
        return check_shell(args[args.index("-c") + 1], exists=exists, cwd=cwd)
    return None


def _check_find(_name, args, _exists, _cwd) -> str | None:
    if "-delete" in args:
        return "find -delete removes matching files permanently"
    for index, arg in enumerate(args[:-1]):
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            if _program(args[index + 1]) in _SIMPLE:
                return f"find {arg} {_program(args[index + 1])} removes files"
    return None


def _check_xargs(_name, args, exists, cwd) -> str | None:
    rest = _skip_options(args, _XARGS_OPTIONS_WITH_ARG)
    reason = _check_words(rest, exists, cwd)
    return f"xargs {_program(rest[0])}: {reason}" if reason else None


def _check_git(_name, args, _exists, _cwd) -> str | None:
    rest = _skip_options(args, _GIT_OPTIONS_WITH_ARG)
    if rest[:1] == ["clean"] and not {"-n", "--dry-run"} & set(rest):
        return "git clean deletes untracked files permanently"
    return None


def _check_move(name, args, exists, cwd) -> str | None:
    if {"-n", "--no-clobber", "--update=none"} & set(args):
        return None
    operands, target_dir = _operands(args)
    if target_dir is None:
        if len(operands) < 2:
            return None
        target_dir, operands = operands[-1], operands[:-1]
        if not _is_dir(target_dir, exists, cwd):
            if _is_existing_file(target_dir, exists, cwd):
                return f"{name} would overwrite existing file: {target_dir}"
            return None
    for source in operands:
        dest = os.path.join(target_dir, os.path.basename(source.rstrip("/")))
        if _is_existing_file(dest, exists, cwd):
            return f"{name} would overwrite existing file: {dest}"
    return None


def _operands(args: list[str]) -> tuple[list[str], str | None]:
    operands: list[str] = []
    target_dir = None
    options_done = False
    words = iter(args)
    for arg in words:
        if options_done or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            options_done = True
        elif arg == "-t":
            target_dir = next(words, None)
        elif arg.startswith("--target-directory="):
            target_dir = arg.split("=", 1)[1]
    return operands, target_dir


def _check_tee(_name, args, exists, cwd) -> str | None:
    if {"-a", "--append"} & set(args):
        return None
    for arg in args:
        if not arg.startswith("-") and _is_existing_file(arg, exists, cwd):
            return f"tee would overwrite existing file: {arg}"
    return None


def _check_redirections(command: str, exists: Exists, cwd: str | None) -> str | None:
    for target in _redirect_targets(command):
        if target in _HARMLESS_SINKS or target.startswith("/dev/fd/"):
            continue
        if _is_existing_file(target, exists, cwd):
            return f"> redirection would overwrite existing file: {target}"
    return None


def _redirect_targets(command: str) -> list[str]:
    """Return the targets of unquoted ``>`` and ``>|`` (never ``>>`` or ``>&``)."""
    targets, quote, index = [], "", 0
    while index < len(command):
        char = command[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\\":
            index += 1
        elif char == ">":
            if command[index + 1 : index + 2] in (">", "&"):
                index += 2
                continue
            start = index + 2 if command[index + 1 : index + 2] == "|" else index + 1
            word = re.match(r"\s*([^\s;&|<>()]+)", command[start:])
            if word:
                targets.append(word.group(1).strip("'\""))
        index += 1
    return targets


def _resolve(path: str, cwd: str | None) -> str:
    path = os.path.expanduser(path)
    return os.path.join(cwd, path) if cwd and not os.path.isabs(path) else path


def _is_dir(path: str, exists: Exists, cwd: str | None) -> bool:
    return exists(_resolve(path, cwd).rstrip("/") + "/")


def _is_existing_file(path: str, exists: Exists, cwd: str | None) -> bool:
    resolved = _resolve(path, cwd)
    return exists(resolved) and not _is_dir(path, exists, cwd)
