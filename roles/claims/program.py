"""One simple command's words read as a program: its name, flags, values, operands.

``roles.claims.command`` finds the words of each simple command in a shell
command line; this module says what they mean::

    read_programs(["sudo", "/usr/bin/grep", "-ce", "ERROR", "app.log"], ())
    # [Program(name="grep", flags=("-c", "-e"), operands=("app.log",),
    #          values=(("-e", "ERROR"),))]

Flags are named without their values (``-lc`` is ``-l`` and ``-c``;
``--regexp=x`` is ``--regexp``); an option that takes an argument keeps it in
``values`` as ``(flag, value)`` pairs, in order, whether it was attached
(``-F,``, ``-A3``, ``--max-count=2``) or the next word (``-e ERROR``), so the
argument is never mistaken for an operand. Which options take one is known for
the programs R4a reads (``OPTIONS``); an unknown program's flags take none.
``find``'s predicates are its flags (``-name`` keeps its glob as the value), and
the programs it runs with ``-exec`` and the one ``xargs`` runs are further
programs, marked by ``via``, that read the names they are given as arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Program", "Redirect", "read_programs"]


@dataclass(frozen=True)
class Redirect:
    """A redirection: ``operator`` with its descriptor (``<``, ``2>``, ``>>``,
    ``<<`` for a here-doc, ``<<<``) and ``target`` (a file, a descriptor, the
    here-doc's body or the here-string)."""

    operator: str
    target: str


@dataclass(frozen=True)
class Program:
    """One program a command runs, its words as the shell passes them."""

    name: str
    flags: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    values: tuple[tuple[str, str], ...] = ()
    # "xargs" or "-exec" when another program runs it with names as arguments.
    via: str = ""

    def flag(self, *names: str) -> str | None:
        """Return the value of the first of ``names`` given ("" for a flag that
        takes none), or None when none of them is given."""
        for flag, value in self.values:
            if flag in names:
                return value
        return "" if any(flag in names for flag in self.flags) else None

    def flag_values(self, *names: str) -> tuple[str, ...]:
        """Return every value given to any of ``names`` (``grep -e a -e b``)."""
        return tuple(value for flag, value in self.values if flag in names)


@dataclass(frozen=True)
class Options:
    """Which options of a program take an argument."""

    short: str = ""  # short options whose argument is attached or the next word
    long: frozenset[str] = frozenset()
    attached: str = ""  # short options whose argument can only be attached
    stops: bool = False  # options end at the first operand (the rest is a command)


def _options(short="", long="", attached="", stops=False) -> Options:
    return Options(short, frozenset(long.split()), attached, stops)


_GREP = _options(
    "efmABCdD",
    "--regexp --file --max-count --after-context --before-context --context "
    "--include --exclude --exclude-dir --label --devices --directories",
)
_AWK = _options("Ffv", "--field-separator --file --assign")
_SHELL = _options("co", stops=True)
OPTIONS: dict[str, Options] = {
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _options(
        "efgmtTABCjM", "--regexp --file --glob --iglob --type --type-not --max-count"
    ),
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "cut": _options("dfcb", "--delimiter --fields --characters --bytes"),
    "sort": _options("ktoST", "--key --field-separator --output"),
    "head": _options("nc", "--lines --bytes"),
    "tail": _options("nc", "--lines --bytes"),
    "sed": _options("efl", "--expression --file --line-length", attached="i"),
    "uniq": _options("fsw", "--skip-fields --skip-chars --check-chars"),
    "paste": _options("d", "--delimiters"),
    "ls": _options("IwT", "--ignore --hide --width --sort --format"),
    "wc": _options(long="--files0-from"),
    "xargs": _options(
        "ILnPdaEs", "--max-args --max-procs --delimiter --arg-file", "ie", True
    ),
    "python": _options("cmW", stops=True),
    "python3": _options("cmW", stops=True),
    "perl": _options("eEI"),
    "ruby": _options("eI"),
    "node": _options("ep", "--eval --print"),
    "jq": _options(long="--arg --argjson --slurpfile --rawfile"),
    "sh": _SHELL,
    "bash": _SHELL,
    "dash": _SHELL,
    "zsh": _SHELL,
    "ksh": _SHELL,
}
# Programs that run the rest of their words as a command, with their options.
PREFIXES: dict[str, Options] = {
    "sudo": _options("ugCDhprtTU", "--user --group --chdir", stops=True),
    "env": _options("uCS", "--unset --chdir --split-string", stops=True),
    "command": _options(stops=True),
    "builtin": _options(stops=True),
    "exec": _options("a", stops=True),
    "time": _options("fo", "--format --output", stops=True),
    "nice": _options("n", "--adjustment", stops=True),
    "nohup": _options(stops=True),
    "stdbuf": _options("ioe", "--input --output --error", stops=True),
    "timeout": _options("sk", "--signal --kill-after", stops=True),
}
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
FIND_VALUED = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname "
    "-type -xtype -maxdepth -mindepth -size -mtime -mmin -atime -amin -ctime -cmin "
    "-newer -anewer -cnewer -user -group -uid -gid -perm -printf -fprint -fprint0 "
    "-fls -links -inum -samefile -used -regextype -files0-from -context".split()
)
FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FIND_START = ("-H", "-L", "-P")
# The script of ``sh -c``, read as commands; the caller parses it.
Script = Callable[[str], list[Program]]


def read_programs(
    words: list[str], redirects: tuple[Redirect, ...], script: Script, via: str = ""
) -> list[Program]:
    """Return the programs a simple command of ``words`` runs, in pipeline order:
    the program itself after any prefix (``sudo``, ``env X=1``, ``time``), then
    what it runs by name (``xargs PROG``, ``find -exec PROG``); ``sh -c SCRIPT``
    is the last pipeline of SCRIPT, as a subshell would be."""
    words = _without_prefixes(words)
    if not words:
        return []
    name = basename(words[0])
    if name == "find":
        return _find(words[1:], redirects, script, via)
    options = OPTIONS.get(name, Options())
    flags, values, operands, rest = read_options(words[1:], options)
    if name in SHELLS and "-c" in flags:
        code = next((value for flag, value in values if flag == "-c"), "")
        return script(code)
    program = Program(name, flags, operands, redirects, values, via)
    if name == "xargs":
        ran = words[1 + rest :] if rest >= 0 else ["echo"]
        run = read_programs(ran, (), script, "xargs")
        return [Program(name, flags, (), redirects, values, via), *run]
    return [program]


def basename(word: str) -> str:
    """Return a program's name without its directory (``/usr/bin/wc`` → ``wc``)."""
    return word.rstrip("/").rsplit("/", 1)[-1] if "$" not in word else word


def read_options(
    words: list[str], options: Options
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...], int]:
    """Return ``(flags, values, operands, index of the first operand or -1)``."""
    flags: list[str] = []
    values: list[tuple[str, str]] = []
    operands: list[str] = []
    first, done, index = -1, False, 0
    while index < len(words):
        word = words[index]
        index += 1
        if done or word == "-" or not word.startswith("-"):
            first = index - 1 if first < 0 else first
            if options.stops:
                operands.extend(words[index - 1 :])
                break
            operands.append(word)
        elif word == "--":
            done = True
        elif word.startswith("--"):
            flag, equals, value = word.partition("=")
            flags.append(flag)
            if equals:
                values.append((flag, value))
            elif flag in options.long and index < len(words):
                values.append((flag, words[index]))
                index += 1
        else:
            index = _short(word, words, index, options, flags, values)
    return tuple(flags), tuple(values), tuple(operands), first


def _short(word, words, index, options, flags, values) -> int:
    """Split a cluster of short flags; return the index of the next word."""
    if word[1].isdigit():
        flags.append(word)  # head -5, nice -10: a number, not flags 1 and 0
        return index
    for at, char in enumerate(word[1:], 2):
        flag, rest = "-" + char, word[at:]
        flags.append(flag)
        if char in options.attached:
            values.extend([(flag, rest)] if rest else [])
            return index
        if char in options.short:
            if rest:
                values.append((flag, rest))
            elif index < len(words):
                values.append((flag, words[index]))
                index += 1
            return index
    return index


def _without_prefixes(words: list[str]) -> list[str]:
    while words and basename(words[0]) in PREFIXES:
        name = basename(words[0])
        flags, _, _, rest = read_options(words[1:], PREFIXES[name])
        if rest < 0 or (name == "command" and {"-v", "-V"} & set(flags)):
            return words  # a prefix alone (env, time) is the program
        words = words[1 + rest :]
        if name == "env":
            while words and "=" in words[0] and not words[0].startswith("="):
                words = words[1:]
        elif name == "timeout":
            words = words[1:]
    return words


def _find(
    words: list[str], redirects: tuple[Redirect, ...], script: Script, via: str
) -> list[Program]:
    """Read ``find``: start options, paths, then the expression's predicates."""
    flags: list[str] = []
    values: list[tuple[str, str]] = []
    paths: list[str] = []
    runs: list[Program] = []
    index = 0
    while index < len(words) and words[index] in FIND_START:
        flags.append(words[index])
        index += 1
    while index < len(words) and not words[index].startswith(("-", "(", "!")):
        paths.append(words[index])
        index += 1
    while index < len(words):
        word = words[index]
        index += 1
        flags.append(word)
        if word in FIND_RUNS:
            end = index
            while (
                end < len(words)
                and words[end] != ";"
                and not (words[end] == "+" and words[end - 1] == "{}")
            ):
                end += 1
            runs.extend(read_programs(words[index:end], (), script, "-exec"))
            index = end + 1
        elif word in FIND_VALUED and index < len(words):
            values.append((word, words[index]))
            index += 1
    find = Program("find", tuple(flags), tuple(paths), redirects, tuple(values), via)
    return [find, *runs]
