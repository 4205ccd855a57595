"""A shell command line read by a real parser: the pipelines it runs and their programs.

R4a judges what a command computed (a count of lines, of files, a sum), so it
needs what the command runs, not a regular expression's guess at it::

    parse_command("cd /srv && grep -c 'a|b' app.log; sort -u f | wc -l")
    # Command(pipelines=(Pipeline((Program("cd", operands=("/srv",)),)),
    #                    Pipeline((Program("grep", ("-c",), ("a|b", "app.log")),)),
    #                    Pipeline((Program("sort", ("-u",), ("f",)),
    #                              Program("wc", ("-l",))))), error=False)

The parser is tree-sitter with its bash grammar: it is error-tolerant (every
input yields a tree; a syntax error is an ERROR node, read around, and sets
``Command.error``), it knows the whole grammar (pipelines, ``&&``/``||``/``;``
lists, subshells, ``$(…)``, here-docs, ``[[ ]]``, ``$(( ))``, functions,
quoting), it is maintained, and it ships wheels. (bashlex raises on many
constructs and follows an old bash.)

How the parts are reached:

- each item of a list (``a && b; c``) is its own pipeline, in order;
- a command substitution or process substitution (``$(…)``, backticks,
  ``<(…)``) is its own pipeline, listed before the one that holds it (it runs
  first); the word keeps its text as written (``$(ls)``);
- a compound stage of a pipeline (``( … )``, ``{ …; }``, a loop, ``if``,
  ``sh -c '…'``) stands for the last pipeline it runs, the one whose output
  flows on; its other pipelines are listed on their own;
- a function's body is listed as pipelines of its own; a definition prints
  nothing;
- ``xargs PROG`` and ``find … -exec PROG … ;`` add PROG as a further stage with
  ``via`` set (``roles.claims.program``);
- a redirection of a statement belongs to its last stage; a here-doc is a
  ``<<`` redirect whose target is its body.

Words lose their quotes as the shell removes them (``'a|b'`` is ``a|b``,
``\\;`` is ``;``); expansions stay as written (``$VAR``, ``$(ls)``, ``~``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache, partial

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from roles.claims.program import Program, Redirect, read_programs

__all__ = ["Command", "Pipeline", "Program", "Redirect", "parse_command", "word_text"]

BASH = Language(tree_sitter_bash.language())
# Longer text is no command a model runs to compute a number; it is not read.
MAX_TEXT = 100_000
# Deeper nesting than this (subshells, substitutions, sh -c) is not read.
MAX_LEVEL = 60
SEQUENCES = frozenset(
    "program list subshell compound_statement do_group if_statement elif_clause "
    "else_clause for_statement c_style_for_statement while_statement "
    "case_statement case_item negated_command ERROR".split()
)
STATEMENTS = SEQUENCES | frozenset(
    "command pipeline redirected_statement function_definition test_command "
    "variable_assignment variable_assignments declaration_command unset_command "
    "comment".split()
)
REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
LIST_OPERATORS = frozenset({"&&", "||", ";", "&"})
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_ESCAPED_IN_QUOTES = re.compile(r'\\([$`"\\\n])')
_ANSI_C = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_ANSI_C_LETTERS = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b"}
_ANSI_C_LETTERS |= {"e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v"}


@dataclass(frozen=True)
class Pipeline:
    """Programs joined by ``|``: each reads what the one before it printed."""

    programs: tuple[Program, ...]


@dataclass(frozen=True)
class Command:
    """A command line: its pipelines in the order they run, and whether the
    parser met a syntax error (what parsed around it is still read)."""

    text: str
    pipelines: tuple[Pipeline, ...]
    error: bool


def parse_command(text: str) -> Command:
    """Return the pipelines of the shell command ``text``; never raises (empty,
    huge or malformed text gives a Command with the pipelines that parsed)."""
    text = text if isinstance(text, str) else ""
    if len(text) > MAX_TEXT:
        return Command(text, (), True)
    return _parse(text)


@lru_cache(maxsize=1024)
def _parse(text: str) -> Command:
    reader = _Reader(Parser(BASH))
    tree = reader.parser.parse(_encode(text))
    reader.emit(reader.statement(tree.root_node, 0))
    error = reader.error or tree.root_node.has_error
    return Command(text, tuple(reader.pipelines), error)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def word_text(node: Node) -> str:
    """Return the text the shell passes for the word ``node``: quotes removed,
    escapes resolved, expansions as written."""
    kind = node.type
    if kind == "word":
        return _ESCAPED.sub(r"\1", _text(node).replace("\\\n", ""))
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind in ("string", "translated_string"):
        return _double_quoted(node)
    if kind == "ansi_c_string":
        return _ANSI_C.sub(_ansi_c_char, _text(node)[2:-1])
    if kind in ("concatenation", "command_name"):
        return "".join(word_text(child) for child in node.children)
    return _text(node)


def _double_quoted(node: Node) -> str:
    raw = node.text or b""
    base, at = node.start_byte, raw.find(b'"') + 1
    parts = []
    for child in node.named_children:
        parts.append(raw[at : child.start_byte - base].decode("utf-8", "replace"))
        text = _text(child)
        if child.type == "string_content":
            text = _ESCAPED_IN_QUOTES.sub(r"\1", text)
        parts.append(text)
        at = child.end_byte - base
    parts.append(raw[at : max(at, len(raw) - 1)].decode("utf-8", "replace"))
    return "".join(parts)


def _ansi_c_char(found: re.Match[str]) -> str:
    code = found.group(1)
    if code[0] == "x" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code.isdigit() and "8" not in code and "9" not in code:
        return chr(int(code, 8))
    return _ANSI_C_LETTERS.get(code, code)


class _Reader:
    """Walk a tree, collecting pipelines; ``statement`` returns the stages a
    statement feeds to the next stage of a pipeline it stands in."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.pipelines: list[Pipeline] = []
        self.error = False

    def emit(self, stages: list[Program]) -> None:
        if stages:
            self.pipelines.append(Pipeline(tuple(stages)))

    def statement(self, node: Node, level: int) -> list[Program]:
        if level > MAX_LEVEL:
            self.error = True
            return []
        kind = node.type
        if kind == "command":
            return self.command(node, level)
        if kind == "pipeline":
            children = node.named_children
            return [p for child in children for p in self.statement(child, level + 1)]
        if kind == "redirected_statement":
            return self.redirected(node, level)
        if kind == "function_definition":
            self.emit(self.sequence(node.named_children, level))
            return []
        if kind in SEQUENCES:
            return self.sequence(node.named_children, level)
        self.substitutions(node, level)
        return []

    def sequence(self, nodes: list[Node], level: int) -> list[Program]:
        """Emit each statement of ``nodes`` but the last, whose stages it returns."""
        last: list[Program] = []
        for child in nodes:
            if child.type in STATEMENTS:
                self.emit(last)
                last = self.statement(child, level + 1)
            else:
                self.substitutions(child, level + 1)
        return last

    def command(self, node: Node, level: int) -> list[Program]:
        words: list[str] = []
        redirects: list[Redirect] = []
        for child in node.named_children:
            self.substitutions(child, level)
            if child.type in REDIRECTS:
                redirects.append(redirect(child))
            elif child.type not in ("variable_assignment", "comment"):
                words.append(word_text(child))
        script = partial(self.script, level=level + 1)
        return read_programs(words, tuple(redirects), script)

    def script(self, text: str, level: int) -> list[Program]:
        """Return the stages of ``sh -c``'s script, as a subshell's."""
        if level > MAX_LEVEL or len(text) > MAX_TEXT:
            self.error = True
            return []
        root = self.parser.parse(_encode(text)).root_node
        self.error = self.error or root.has_error
        return self.statement(root, level + 1)

    def redirected(self, node: Node, level: int) -> list[Program]:
        stages: list[Program] = []
        extra: list[Redirect] = []
        following: list[Node] = []
        for child in node.named_children:
            if child.type == "heredoc_redirect":
                stages = self.heredoc(child, level, stages, extra, following)
            elif child.type in REDIRECTS:
                self.substitutions(child, level)
                extra.append(redirect(child))
            elif child.type in STATEMENTS:
                stages = self.statement(child, level + 1)
            else:
                self.substitutions(child, level)
        if extra and stages:
            last = stages[-1]
            stages[-1] = replace(last, redirects=last.redirects + tuple(extra))
            extra.clear()
        if following:
            self.emit(stages)
            return self.sequence(following, level)
        return stages

    def heredoc(self, node, level, stages, extra, following) -> list[Program]:
        """Read a here-doc: its body, and the rest of the line it starts on
        (redirects, ``| more stages``, ``&& more statements``)."""
        operator, listed, more = "<<", False, []
        for child in node.children:
            if not child.is_named:
                listed = listed or child.type in LIST_OPERATORS
                operator = child.type if child.type.startswith("<<") else operator
            elif child.type == "heredoc_body":
                self.substitutions(child, level)
                extra.insert(0, Redirect(operator, _text(child)))
            elif child.type in REDIRECTS:
                extra.append(redirect(child))
            elif child.type == "pipeline" and not listed:
                more = self.statement(child, level + 1)
            elif child.type in STATEMENTS:
                following.append(child)
        if extra and stages:
            last = stages[-1]
            stages = [*stages[:-1], replace(last, redirects=(*last.redirects, *extra))]
            extra.clear()
        return [*stages, *more]

    def substitutions(self, node: Node, level: int) -> None:
        """Emit the pipelines of the command substitutions inside ``node``."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type in SUBSTITUTIONS:
                self.emit(self.sequence(current.named_children, level))
            else:
                stack.extend(reversed(current.named_children))


def redirect(node: Node) -> Redirect:
    """Return the Redirect a ``file_redirect`` or ``herestring_redirect`` makes."""
    operator, target = "", ""
    for child in node.children:
        if child.type == "file_descriptor" or not child.is_named:
            operator += _text(child)
        elif not target:
            target = word_text(child)
    return Redirect(operator, target)
