"""What a parsed command computes: the questions R4a asks of ``roles.claims.command``.

A count is judged by what its lines are: ``wc -l`` after ``cat f`` counts the
lines of f, after ``grep X f`` the matching lines, after ``find`` the files,
after ``sort -u`` the distinct lines::

    counts(parse_command("find src -name '*.py' | wc -l").pipelines[0])  # "files"
    counts(parse_command("awk '{s+=$3} END{print s}' a").pipelines[0])  # "sum"

The kinds are ``lines``, ``words``, ``bytes``, ``chars``, ``matches``,
``distinct``, ``files`` (``COUNTS``), ``sum``, ``average`` and ``size`` (what
``du``, ``stat -c %s`` or ``find -printf %s`` print of a file), or "".
An awk program's text is awk, not shell: ``roles.claims.awk`` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from roles.claims.awk import awk_counts, awk_patterns, awk_role, awk_tests_a_field
from roles.claims.command import Command, Pipeline, Program

__all__ = [
    "COUNTS",
    "Order",
    "command_counts",
    "counted_files",
    "counts",
    "counts_every_line",
    "is_inverted",
    "listing_depth",
    "lists_every_entry",
    "lists_names",
    "looks_for",
    "order",
    "printed_keys",
    "runs",
    "search_patterns",
    "selects_by_field",
]

COUNTS = frozenset({"lines", "words", "bytes", "chars", "matches", "distinct", "files"})
GREPS = frozenset({"grep", "egrep", "fgrep", "rg"})
AWKS = frozenset({"awk", "gawk", "mawk"})
LISTERS = frozenset({"ls", "find", "tree", "locate", "fd", "fdfind"})
# Run by xargs or find -exec, these print the names they are given, not contents.
NAME_PRINTERS = frozenset(
    {"echo", "printf", "basename", "dirname", "realpath", "readlink", "stat", "du"}
)
READERS = frozenset(
    "cat tac nl head tail sort uniq cut paste wc tr column less more zcat bzcat "
    "xzcat strings jq".split()
)
INLINE_CODE = {"python": "-c", "python3": "-c", "perl": "-e", "ruby": "-e"}
INLINE_CODE |= {"node": "-e", "php": "-r"}
EVERY_LINE = frozenset({"", "^", "$", ".*", "^.*", "^.*$"})
# wc prints lines, words, chars, bytes in this order; the first asked is named.
WC_KINDS = (("-l", "--lines", "lines"), ("-w", "--words", "words"))
WC_KINDS += (("-m", "--chars", "chars"), ("-c", "--bytes", "bytes"))
DATAMASH = {"sum": "sum", "mean": "average", "count": "lines"}
DATAMASH |= {"countunique": "distinct"}
# find's tests of what kind an entry is and how deep it lies, and its
# actions: none of them tests what an entry holds or how it is named.
FIND_STRUCTURE = frozenset(
    "-type -xtype -maxdepth -mindepth -depth -d -follow -xdev -mount -noleaf "
    "-print -print0 -printf -fprint -ls -fls -L -H -P".split()
)
# Programs that print a line on each file they are given, testing none.
REPORTERS = frozenset("wc du stat file md5sum sha1sum sha256sum cksum".split())
# Stages that pass every line of a listing on, reshaped or in another order.
RESHAPERS = frozenset("sort cat tac column nl tr basename cut paste".split())
# A filter of a listing that tests only a line's first character, or a
# trailing slash: an entry's type in a long listing (``ls -l``'s ``d``, ``-``, ``l``)
# or in ``ls -p``, never what the entry holds.
TYPE_PATTERN = re.compile(r"\^(?:\\?.|\[[^\]]+\])|/\$|\\/\$")
# A file's size in a format: stat's and find -printf's directives for bytes,
# blocks and kilobytes.
SIZE_DIRECTIVE = re.compile(r"%[-+ #0-9.]*[sbk]")
_SED_ADDRESS = re.compile(r"(?:^|[;\s{])/((?:\\.|[^/\\\n])+)/")


def runs(command: Command, names: frozenset[str] | set[str]) -> bool:
    """Return True when some program of ``command`` is one of ``names``."""
    return any(p.name in names for line in command.pipelines for p in line.programs)


def command_counts(command: Command) -> str:
    """Return what the last pipeline of ``command`` that computes a number
    counts (``counts``), or "" when none does."""
    kinds = (counts(pipeline) for pipeline in reversed(command.pipelines))
    return next((kind for kind in kinds if kind), "")


def counts(pipeline: Pipeline) -> str:
    """Return what the number the last counting stage of ``pipeline`` prints
    counts, given the stages that feed it, or "" when no stage counts."""
    stages = pipeline.programs
    for index in reversed(range(len(stages))):
        kind = _counter_kind(stages[index], stages[index - 1] if index else None)
        if kind:
            break
    else:
        return ""
    if kind not in ("lines", "matches"):
        return kind
    fed = "lines" if _reads_files(stages[index]) else _fed(stages[:index])
    if fed in ("distinct", "files"):
        return fed
    return "matches" if "matches" in (kind, fed) else "lines"


def counts_every_line(command: Command) -> bool:
    """Return True when the last pipeline of ``command`` that computes a
    number counts every line it reads: a line counter (``wc -l``, ``grep -c
    ''``, ``sed -n '$='``, ``awk 'END{print NR}'``) fed by nothing that drops a
    line (``cat`` at most). ``tail -n +2``, ``sed 1d``, ``NR>1`` or ``NR-1``
    leave a line out, and so does any search."""
    pipeline = next((p for p in reversed(command.pipelines) if counts(p)), None)
    if pipeline is None or counts(pipeline) != "lines":
        return False
    stages = pipeline.programs
    at = max(
        i
        for i in range(len(stages))
        if _counter_kind(stages[i], stages[i - 1] if i else None)
    )
    if any(p.name != "cat" or p.flags for p in stages[:at]):
        return False
    counter = stages[at]
    if counter.name in AWKS:
        return re.sub(r"[\s;()]", "", _awk_code(counter)) == "END{printNR}"
    return counter.name == "wc" or counter.name in GREPS or counter.name == "sed"


def _counter_kind(program: Program, before: Program | None) -> str:
    name = program.name
    if name == "wc":
        asked = [kind for *names, kind in WC_KINDS if program.flag(*names) is not None]
        return asked[0] if asked else ("" if program.flags else "lines")
    if name in GREPS and program.flag("-c", "--count", "--count-matches") is not None:
        patterns = search_patterns(program)
        every = bool(patterns) and all(p in EVERY_LINE for p in patterns)
        return "lines" if every and not is_inverted(program) else "matches"
    if name in AWKS:
        return awk_counts(_awk_code(program))
    if name == "sed" and "".join(program.operands[:1]).replace(" ", "") == "$=":
        return "lines"
    if name == "bc" and before is not None and before.name == "paste":
        return "sum" if "+" in (before.flag("-d", "--delimiters") or "") else ""
    if name == "datamash":
        return next((DATAMASH[o] for o in program.operands if o in DATAMASH), "")
    if name == "numsum":
        return "sum"
    return "size" if _prints_size(program) else ""


def _prints_size(program: Program) -> bool:
    """Return True when ``program`` prints files' sizes: ``du``, or ``stat``
    and ``find`` with a format holding a size directive (``%s``, ``%b``, ``%k``)."""
    if program.name == "du":
        return True
    return any(SIZE_DIRECTIVE.search(f) for f in _formats(program))


def _formats(program: Program) -> tuple[str, ...]:
    """Return the output formats of a ``find -printf`` or ``stat -c``."""
    if program.name == "find":
        return program.flag_values("-printf", "-fprintf")
    if program.name in ("stat", "gstat"):
        formats = program.flag_values("-c", "--format", "--printf")
        # -c's value may be parsed as the first operand.
        given = program.flag("-c") is not None
        return formats + (program.operands[:1] if given else ())
    return ()


def _fed(stages: tuple[Program, ...]) -> str:
    """Return what the lines ``stages`` print are: files, distinct lines,
    matching lines or lines."""
    state = "lines"
    for program in stages:
        role = _role(program)
        if role == "list":
            state = "files"
            continue
        names_only = program.via and program.name in NAME_PRINTERS
        if _reads_files(program) and not names_only:
            state = "lines"
        if role == "distinct":
            state = "distinct"
        elif role == "select" and state == "lines":
            state = "matches"
    return state


def _role(program: Program) -> str:
    name = program.name
    if lists_names(program):
        return "list"
    if name in GREPS:
        return "select"
    if name == "uniq" or (name == "sort" and _has(program, "-u", "--unique")):
        return "distinct"
    if name in AWKS:
        return awk_role(_awk_code(program))
    if name == "sed" and program.flag("-n", "--quiet", "--silent") is not None:
        return "select" if _sed_addresses(program) else ""
    return ""


def lists_names(program: Program) -> bool:
    """Return True when ``program`` prints names of files, one a line
    (``ls``, ``find``, ``grep -l``, ``rg --files``, ``git ls-files``)."""
    if program.name in LISTERS and not (program.via and program.name == "find"):
        return True
    if program.name in GREPS:
        names = ("-l", "-L", "--files-with-matches", "--files-without-match", "--files")
        return program.flag(*names) is not None
    return program.name == "git" and program.operands[:1] == ("ls-files",)


def lists_every_entry(command: Command) -> bool:
    """Return True when ``command`` lists every entry of directories, or
    every line of files, and tests nothing of them but an entry's kind and
    depth: ``ls DIR``, ``ls -l DIR | grep -v '^d'``, ``find DIR -maxdepth 1
    -type f``, ``cut -d: -f1 FILE``, each maybe sorted. A name pattern (``ls
    *.py``, ``find -name``), a test of size, time or content (``find -empty``,
    ``grep``), a condition in awk, a loop or an interpreter all test
    something, and so does any program not known here."""
    pipelines = [
        p
        for p in command.pipelines
        if not all(x.name in ("cd", "pwd") for x in p.programs)
    ]
    return bool(pipelines) and not command.error and all(map(_lists_all, pipelines))


def _lists_all(pipeline: Pipeline) -> bool:
    first, *rest = pipeline.programs
    if first.via:
        return False
    if _untested_listing(first):
        typed = first.name == "ls"
    elif (first.name in RESHAPERS or _prints_every_line(first)) and first.operands:
        typed = False
    else:
        return False
    return all(
        p.name in RESHAPERS or _prints_every_line(p) or (typed and _tests_type(p))
        for p in rest
    )


def _untested_listing(program: Program) -> bool:
    """True for ``ls``, ``find`` or ``tree`` testing no name, or a program
    that reports on each file it is given (``wc``, ``du``, ``stat``) given
    every entry of directories (``DIR/*``)."""
    if program.name == "ls":
        return all(_every_entry(o) for o in program.operands)
    if program.name == "find":
        return all(f in FIND_STRUCTURE for f in program.flags)
    if program.name in REPORTERS:
        # Its files are globs of every entry (a format, "%s %n", is no file).
        files = [o for o in program.operands if set("/*?[") & set(o)]
        globbed = [o for o in files if set("*?[") & set(o)]
        return (
            bool(globbed)
            and len(globbed) == len(files)
            and all(map(_every_entry, globbed))
        )
    return program.name == "tree"


def _every_entry(operand: str) -> bool:
    """True for an operand that names every entry of a directory: the
    directory itself, or a glob whose last part is ``*``."""
    if not set("*?[") & set(operand):
        return True
    head, _, last = operand.rstrip("/").rpartition("/")
    return last == "*" and not set("*?[") & set(head)


def _prints_every_line(program: Program) -> bool:
    """True for an awk that prints fields of every line, testing none."""
    if program.name not in AWKS:
        return False
    code = _awk_code(program)
    return bool(code) and not awk_role(code) and not awk_tests_a_field(code)


def _tests_type(program: Program) -> bool:
    """True for a grep over a long listing that tests an entry's type only."""
    if program.name not in GREPS or program.flag("-l", "-L", "-c", "-r") is not None:
        return False
    patterns = search_patterns(program)
    return bool(patterns) and all(TYPE_PATTERN.fullmatch(p) for p in patterns)


def listing_depth(pipeline: Pipeline) -> str:
    """Return how deep the first lister of ``pipeline`` looks: ``top`` (the
    entries directly in the directories it is given: ``ls``, ``find
    -maxdepth 1``, ``tree -L 1``), ``all`` (their subdirectories' too: ``find``,
    ``ls -R``, ``tree``), or "" when no stage lists names."""
    program = next((p for p in pipeline.programs if lists_names(p)), None)
    if program is None or program.name not in ("ls", "find", "tree"):
        return ""
    if program.name == "ls":
        return "all" if _has(program, "-R", "--recursive") else "top"
    limit = program.flag("-maxdepth") if program.name == "find" else None
    if program.name == "tree":
        limit = program.flag("-L")
    if isinstance(limit, str) and limit.isdigit():
        return "top" if int(limit) <= 1 else "all"
    return "all"


def _reads_files(program: Program) -> bool:
    inputs = ("<", "0<", "<<", "<<-", "<<<")
    return bool(
        program.via
        or counted_files(program)
        or any(r.operator in inputs for r in program.redirects)
    )


def counted_files(program: Program) -> tuple[str, ...]:
    """Return the file operands a counter or filter reads (``wc -l a b`` reads
    a and b; a program reading its standard input reads none)."""
    name, operands = program.name, program.operands
    if name in GREPS:
        given = program.flag("-e", "--regexp", "-f", "--file") is not None
        files = operands if given else operands[1:]
    elif name in AWKS:
        code = program.flag("-f", "--file") is None
        files = tuple(o for o in operands[code:] if "=" not in o)
    elif name == "sed":
        files = operands[program.flag("-e", "--expression", "-f", "--file") is None :]
    elif name == "uniq":
        files = operands[:1]
    else:
        files = operands if name in READERS else ()
    return tuple(f for f in files if f != "-")


def search_patterns(program: Program) -> tuple[str, ...]:
    """Return the patterns a ``grep`` or ``rg`` searches with (``-e`` values,
    else its first operand); none when they come from a file (``-f``)."""
    given = program.flag_values("-e", "--regexp")
    if given or program.flag("-f", "--file") is not None:
        return given
    return program.operands[:1]


def is_inverted(program: Program) -> bool:
    """Return True when a ``grep`` keeps the lines that do not match (``-v``)."""
    return program.name in GREPS and program.flag("-v", "--invert-match") is not None


def looks_for(pipeline: Pipeline) -> tuple[str, ...]:
    """Return the patterns the filters of ``pipeline`` select with: grep's
    pattern (not an inverted one's) and ``--include`` glob, awk's ``/re/`` and
    the strings it compares a field to, ``find``'s ``-name``/``-path``/
    ``-regex`` values, ``sed -n``'s addresses, an interpreter's inline code."""
    found: list[str] = []
    for program in pipeline.programs:
        name = program.name
        if name in GREPS and not is_inverted(program):
            found += search_patterns(program)
            found += program.flag_values("--include", "-g", "--glob")
        elif name in AWKS:
            found += awk_patterns(_awk_code(program))
        elif name == "find":
            names = "-name -iname -path -ipath -wholename -iwholename -regex -iregex"
            found += program.flag_values(*names.split())
        elif name == "sed" and program.flag("-n", "--quiet", "--silent") is not None:
            found += _sed_addresses(program)
        elif name in INLINE_CODE:
            found += program.flag_values(INLINE_CODE[name], "--eval")
    return tuple(found)


def selects_by_field(pipeline: Pipeline) -> bool:
    """Return True when a stage of ``pipeline`` tests one field of a line, not
    the whole line: awk comparing ``$N``, ``cut -f``, a grep pattern anchored
    at the line's start."""
    for program in pipeline.programs:
        if program.name in AWKS and awk_tests_a_field(_awk_code(program)):
            return True
        if program.name == "cut" and program.flag("-f", "--fields") is not None:
            return True
        if program.name in GREPS and not is_inverted(program):
            if any(p.startswith("^") for p in search_patterns(program)):
                return True
    return False


def _has(program: Program, *names: str) -> bool:
    return program.flag(*names) is not None


def _awk_code(program: Program) -> str:
    if program.flag("-f", "--file") is not None:
        return ""
    return program.operands[0] if program.operands else ""


def _sed_addresses(program: Program) -> list[str]:
    scripts = program.flag_values("-e", "--expression") or program.operands[:1]
    return [found for script in scripts for found in _SED_ADDRESS.findall(script)]


# --- what a command orders entries by ---------------------------------------

# A format directive of ``find -printf`` and of ``stat -c`` and the key its
# field holds: what an order by that field is an order of.
FIND_KEYS = {"s": "size", "k": "size", "b": "size", "T": "modified", "t": "modified"}
FIND_KEYS |= {"A": "accessed", "a": "accessed", "C": "changed", "c": "changed"}
FIND_KEYS |= {"p": "name", "f": "name", "P": "name"}
STAT_KEYS = {"s": "size", "b": "size", "Y": "modified", "y": "modified"}
STAT_KEYS |= {"X": "accessed", "x": "accessed", "Z": "changed", "z": "changed"}
STAT_KEYS |= {"n": "name", "N": "name"}
_DIRECTIVE = re.compile(r"%[-+ #0-9.]*([A-Za-z@])")
# The fields of a long listing (``ls -l``, ``find -ls``): the size, then the
# three of the time of the last change, then the name.
LONG_FIELDS = ("", "", "", "", "size", "modified", "modified", "modified", "name")
FIND_LS_FIELDS = ("", "", "", "", "", "", *LONG_FIELDS[4:])
# ``ls --sort=WORD`` and the key of each; ``ls -t`` orders by the time
# ``-u`` or ``-c`` names.
LS_SORTS = {"time": "modified", "size": "size", "name": "name", "version": "name"}
LS_SORTS |= {"extension": "name", "none": "", "width": ""}
WC_FIELDS = {"-l": "lines", "--lines": "lines", "-w": "words", "--words": "words"}
WC_FIELDS |= {"-c": "size", "--bytes": "size", "-m": "size", "--chars": "size"}
_SORT_KEY = re.compile(r"\d+")
_AWK_PRINT = re.compile(r"\s*\{\s*print\s+((?:\$\d+\s*,?\s*)+)\}\s*")


@dataclass(frozen=True)
class Order:
    """The order a pipeline prints entries in: by ``key`` (``modified``,
    ``size``, ``lines``, ``words``, ``name``, ``accessed``, ``changed``, or
    ``content``: a value the files hold), largest first when ``descending``;
    ``kept`` is ``first`` or ``last`` when ``head`` or ``tail`` kept only
    that end of it."""

    key: str
    descending: bool = False
    kept: str = ""

    def end(self, first: bool) -> str:
        """Return which extreme (``max`` or ``min``) the first printed entry
        (``first``) or the last one is."""
        return "max" if first == self.descending else "min"


def order(pipeline: Pipeline) -> Order | None:
    """Return the order ``pipeline`` prints its entries in, when a stage
    orders them (``sort``, ``ls``) by a key known here, else None::

        order(parse("find d -printf '%s %p\\n' | sort -n | tail -1"))
        # Order("size", descending=False, kept="last")
    """
    fields: tuple[str, ...] | None = None
    found: Order | None = None
    for program in pipeline.programs:
        name = program.name
        if name == "sort":
            fields = ("content",) * 9 if program.operands else fields
            key = _sort_key(program, fields)
            descending = _has(program, "-r", "--reverse") or key[1]
            found = Order(key[0], descending) if key[0] else None
        elif name == "ls":
            fields, found = _listing(program)
        elif name in ("head", "tail") and found is not None and not found.kept:
            # head -n -2 keeps all but the last lines, tail -n +2 all but the
            # first: neither keeps an end.
            count = program.flag("-n", "--lines") or ""
            if not count.startswith("-" if name == "head" else "+"):
                found = Order(found.key, found.descending, _KEPT[name])
        elif name == "tac" and found is not None:
            found = Order(found.key, not found.descending, found.kept)
        elif name in AWKS:
            fields = _printed_fields(program, fields)
        elif name in GREPS and not counted_files(program):
            continue  # a filter of lines keeps their fields and their order
        else:
            produced = _fields(program)
            if produced is not None:
                fields, found = produced, None  # new lines, in no order
            else:
                fields = None  # a filter (sed, cut, uniq): the order stays
    return found


_KEPT = {"head": "first", "tail": "last"}


def printed_keys(pipeline: Pipeline) -> frozenset[str]:
    """Return the keys whose values the first stage of ``pipeline`` prints
    for each entry (``ls -l``: size and time; ``wc -l``: lines)."""
    if not pipeline.programs:
        return frozenset()
    first = pipeline.programs[0]
    fields = _listing(first)[0] if first.name == "ls" else _fields(first)
    return frozenset(fields or ())


def _listing(program: Program) -> tuple[tuple[str, ...], Order | None]:
    """Return the fields and the order of an ``ls``."""
    # Short flags one by one: "-1t" is read as a number elsewhere (head -5).
    letters = {c for f in program.flags if f[:2] != "--" for c in f[1:]}
    fields = LONG_FIELDS if letters & set("ln") else ("name",)
    if letters & set("go") and not letters & set("ln"):
        fields = ()  # -g and -o leave a field out
    time = "accessed" if "u" in letters else "modified"
    time = "changed" if "c" in letters else time
    sort = program.flag("--sort")
    if letters & set("Uf"):
        key = ""
    elif "S" in letters:
        key = "size"
    elif "t" in letters:
        key = time
    elif sort is not None:
        key = LS_SORTS.get(sort, "")
        key = time if key == "modified" else key
    else:
        key = "name"
    # Times and sizes come largest first, names smallest first.
    descending = key != "name"
    if "r" in letters or _has(program, "--reverse"):
        descending = not descending
    return fields, Order(key, descending) if key else None


def _fields(program: Program) -> tuple[str, ...] | None:
    """Return the key of each field of the lines ``program`` prints, when it
    prints one line an entry, else None; a program that reads the files
    prints what they hold (``content``)."""
    name = program.name
    formats = _formats(program)
    if name == "find":
        if formats:
            return _directive_fields(formats[0], FIND_KEYS)
        return FIND_LS_FIELDS if _has(program, "-ls") else ("name",)
    if name in ("stat", "gstat"):
        return _directive_fields(formats[0], STAT_KEYS) if formats else None
    if name == "du":
        return ("size", "name")
    if name == "wc":
        kinds = [WC_FIELDS[f] for f in program.flags if f in WC_FIELDS]
        return (*(kinds or ("lines", "words", "size")), "name")
    if name in GREPS and _has(program, "-c", "--count"):
        return None  # name:count, one field to sort
    if counted_files(program) or (program.via and name not in NAME_PRINTERS):
        return ("content",) * 9
    return None


def _directive_fields(form: str, keys: dict[str, str]) -> tuple[str, ...]:
    """Return the key of each blank-separated field of a format (``%T@ %p``)."""
    fields = []
    for part in form.replace("\\t", " ").replace("\\n", " ").split():
        found = _DIRECTIVE.search(part)
        fields.append(keys.get(found[1], "") if found else "")
    return tuple(fields)


def _sort_key(program: Program, fields: tuple[str, ...] | None) -> tuple[str, bool]:
    """Return the key of the field ``sort`` orders by, and whether that field
    is ordered in reverse (``-k2,2nr``)."""
    spec = program.flag("-k", "--key") or "1"
    found = _SORT_KEY.match(spec)
    separator = program.flag("-t", "--field-separator")
    if found is None or fields is None or separator not in (None, " ", "\t"):
        content = bool(fields) and set(fields) == {"content"}
        return ("content" if content else "", False)
    index = int(found[0]) - 1
    key = fields[index] if index < len(fields) else ""
    # The options of a key may follow its start or its end (-k2r, -k2,2nr).
    return key, "r" in re.sub(r"[\d.,]", "", spec)


def _printed_fields(
    program: Program, fields: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """Return the fields an awk that prints fields (``{print $5, $9}``) keeps."""
    if counted_files(program):
        return ("content",) * 9
    printed = _AWK_PRINT.fullmatch(_awk_code(program))
    if fields is None or printed is None:
        return None
    numbers = [int(n) for n in re.findall(r"\d+", printed[1])]
    return tuple(fields[n - 1] if 0 < n <= len(fields) else "" for n in numbers)
