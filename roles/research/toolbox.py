"""The research sub-agents' read-only tools over one repository.

Four tools, none of which runs a command or writes: ``search_index`` (ranked
lines from the lexical index), ``grep`` (a regular expression over the indexed
text), ``glob`` (file names) and ``read_file`` (numbered lines of one file).
Paths are confined to the repository root as the executor's file tools are
(``roles.tools.files``). Every line a tool shows is remembered in ``shown``,
so an answer's citations can be checked against what the tools really showed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roles.llm.client import ToolSpec
from roles.research.index import RepoIndex
from roles.tools import files
from roles.tools.errors import ToolError
from roles.tools.records import head_tail

SEARCH_HITS = 10
GREP_MATCHES = 40
GREP_PATTERN_CHARS = 200
READ_LINES = 200
READ_CHARS = 6000
LINE_CHARS = 300
OUTPUT_LIMIT = 6000
# A group that repeats and is repeated, "(a+)+", can take exponential time.
NESTED_REPEAT = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]")


def _schema(required: tuple[str, ...], **props: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            name: {"type": kind, "description": text}
            for name, (kind, text) in props.items()
        },
        "required": list(required),
    }


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_index",
        "Search the repository's files for words (names, identifiers, phrases); "
        "returns ranked 'path:line: text' lines, a line that defines a word first.",
        _schema(("query",), query=("string", "Words to look for.")),
    ),
    ToolSpec(
        "grep",
        "Find lines matching a Python regular expression in the repository's text "
        "files; returns 'path:line: text'.",
        _schema(
            ("pattern",),
            pattern=("string", "The regular expression."),
            path=("string", "Only files under this path (default: all)."),
        ),
    ),
    ToolSpec(
        "glob",
        "List the repository's files matching a pattern ('**' recurses), "
        "e.g. '**/*.py'.",
        _schema(("pattern",), pattern=("string", "Glob pattern.")),
    ),
    ToolSpec(
        "read_file",
        f"Return numbered lines of a file (at most {READ_LINES} a call).",
        _schema(
            ("path",),
            path=("string", "File path relative to the repository."),
            start_line=("integer", "First line (default 1)."),
            end_line=("integer", "Last line (default: start_line + 199)."),
        ),
    ),
)


class ResearchToolbox:
    """Run the research tools over one indexed repository, noting what they show."""

    def __init__(self, index: RepoIndex):
        self.index = index
        self.root = index.root
        self.shown: dict[str, set[int]] = {}
        self.outputs: list[str] = []

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """Return the tools as the model sees them."""
        return TOOL_SPECS

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        """Run one tool call and return its output; raise ToolError on a bad call."""
        tools = {
            "search_index": self._search,
            "grep": self._grep,
            "glob": self._glob,
            "read_file": self._read,
        }
        if name not in tools:
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(tools)}")
        if not isinstance(args, Mapping):
            raise ToolError(f"{name} arguments must be a JSON object")
        output = head_tail(tools[name](args), OUTPUT_LIMIT)
        self.outputs.append(output)
        return output

    def relative(self, path: str) -> str | None:
        """Return ``path`` relative to the root, or None when it is outside."""
        candidate = Path(path.strip())
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            return candidate.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None

    def _show(self, path: str, lines) -> None:
        self.shown.setdefault(path, set()).update(lines)

    def _search(self, args: Mapping[str, Any]) -> str:
        query = _text(args, "query")
        hits = self.index.search(query, SEARCH_HITS)
        if not hits:
            return (
                f"(no indexed line holds a word of {query!r}; try other words, "
                "grep for part of a name, or glob for file names)"
            )
        for hit in hits:
            self._show(hit.path, [hit.line])
        return "\n".join(
            f"{h.path}:{h.line}: {h.text}" + ("   [defines]" if h.defines else "")
            for h in hits
        )

    def _grep(self, args: Mapping[str, Any]) -> str:
        raw = _text(args, "pattern")
        if len(raw) > GREP_PATTERN_CHARS or NESTED_REPEAT.search(raw):
            raise ToolError(
                f"pattern must be at most {GREP_PATTERN_CHARS} characters with no "
                "repeated group that itself repeats; search simpler words"
            )
        try:
            pattern = re.compile(raw)
        except re.error as err:
            raise ToolError(f"invalid regular expression {raw!r}: {err}") from None
        under = self._under(args.get("path"))
        found: list[str] = []
        size = 0
        for path, start, body in self.index.chunks():
            if under and not (path == under or path.startswith(f"{under}/")):
                continue
            for offset, line in enumerate(body.split("\n")):
                if not pattern.search(line[:LINE_CHARS]):
                    continue
                row = f"{path}:{start + offset}: {line[:LINE_CHARS].strip()}"
                size += len(row) + 1
                if len(found) >= GREP_MATCHES or size > OUTPUT_LIMIT - 100:
                    found.append(
                        f"[stopped at {len(found)} matches; narrow the search]"
                    )
                    return "\n".join(found)
                self._show(path, [start + offset])
                found.append(row)
        return "\n".join(found) or f"(no line matches {raw!r})"

    def _under(self, path: Any) -> str:
        if path in (None, "", "."):
            return ""
        if not isinstance(path, str):
            raise ToolError("path must be a string")
        files.resolve_confined(path, self.root, (self.root,))
        return self.relative(path) or ""

    def _glob(self, args: Mapping[str, Any]) -> str:
        pattern = _text(args, "pattern")
        return files.glob_files(pattern, ".", workspace=self.root, roots=(self.root,))

    def _read(self, args: Mapping[str, Any]) -> str:
        path = files.resolve_confined(_text(args, "path"), self.root, (self.root,))
        if not path.exists():
            raise ToolError(
                files.not_found(path, workspace=self.root, roots=(self.root,))
            )
        lines = files.read_text(path).splitlines()
        first = _line(args, "start_line", 1)
        last = min(_line(args, "end_line", first + READ_LINES - 1), len(lines))
        last = min(last, first + READ_LINES - 1)
        rel = path.relative_to(self.root).as_posix()
        if first > len(lines):
            return f"{rel} has {len(lines)} lines; start_line {first} is past its end"
        shown, size = [], 0
        for number in range(first, last + 1):
            row = f"{number:>5}| {lines[number - 1][:LINE_CHARS]}"
            size += len(row) + 1
            if shown and size > READ_CHARS:
                break
            shown.append(row)
        end = first + len(shown) - 1
        self._show(rel, range(first, end + 1))
        more = f"; read from line {end + 1} for more" if end < len(lines) else ""
        return f"{rel} lines {first}-{end} of {len(lines)}{more}:\n" + "\n".join(shown)


def _text(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{key} must be a non-empty string")
    return value.strip()


def _line(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ToolError(f"{key} must be a whole number, not {value!r}") from None
    if number < 1:
        raise ToolError(f"{key} must be at least 1, not {number}")
    return number
