"""Recover one JSON value from what a language model actually wrote.

Models wrap JSON in reasoning (``<think>…</think>``), code fences, prose before
and after, or emit two objects in a row (go-artoo issues #31, #61, #85, #102).
The rules here, in order:

1. ``<think>…</think>`` blocks are removed; text before a lone ``</think>``
   (a template that opened the block in the prompt) is reasoning too.
2. A fenced block (```` ```json … ``` ````) holding a JSON value wins over
   the surrounding prose.
3. Otherwise the first complete JSON object in the visible text is taken (then
   the first array), found by a string-aware bracket scanner, so braces and
   escaped quotes inside strings do not confuse it and trailing text is ignored.
4. An unclosed ``<think>`` hides everything after it. Only when the visible text
   holds no JSON at all is the last complete value inside that unfinished
   reasoning used: a model cut off mid-thought writes drafts first and its
   answer last, and the caller's schema validation (plus one repair request)
   still guards against a wrong guess.

Example: ``'Sure!\\n```json\\n{"a": "}"}\\n```\\nDone.'`` gives ``{"a": "}"}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PAIRS = {"{": "}", "[": "]"}


class JSONExtractError(ValueError):
    """Raised when a reply holds no usable JSON value; the message says why."""


def split_think(text: str) -> tuple[str, str]:
    """Return ``(visible, unfinished)``: text outside reasoning, and unclosed reasoning.

    ``unfinished`` is what follows an unclosed ``<think>`` (empty when none).
    """
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened is None:
        return text.strip(), ""
    return text[: opened.start()].strip(), text[opened.end() :].strip()


def strip_think(text: str) -> str:
    """Return ``text`` without reasoning blocks, an unclosed one cut to the end."""
    return split_think(text)[0]


def strip_fences(text: str) -> str:
    """Return the body of the first code fence in ``text``, or ``text`` trimmed."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def extract_json(text: str) -> Any:
    """Return the JSON value a model reply carries, by the module's rules.

    Raises JSONExtractError naming the problem (nothing found, invalid, cut off).
    """
    visible, unfinished = split_think(text)
    for fenced in _FENCE.finditer(visible):
        value = _first_value(fenced.group(1))
        if value is not _NOTHING:
            return value
    value = _first_value(visible)
    if value is not _NOTHING:
        return value
    drafts = list(_values(unfinished, "{")) or list(_values(unfinished, "["))
    if drafts:
        return drafts[-1]
    raise JSONExtractError(_diagnose(visible or unfinished))


def parse_as(text: str, model_cls: type[ModelT]) -> ModelT:
    """Extract the reply's JSON and validate it with ``model_cls``.

    Raises JSONExtractError or pydantic's ValidationError.
    """
    return model_cls.model_validate(extract_json(text))


def describe_error(err: Exception) -> str:
    """Return a short, model-readable account of a parse or validation error."""
    if isinstance(err, ValidationError):
        lines = []
        for item in err.errors(include_url=False):
            where = ".".join(str(p) for p in item["loc"]) or "(root)"
            lines.append(f"- {where}: {item['msg']}")
        return f"{err.error_count()} validation error(s):\n" + "\n".join(lines)
    return str(err)


_NOTHING = object()


def _first_value(text: str) -> Any:
    for opener in "{[":
        for value in _values(text, opener):
            return value
    return _NOTHING


def _values(text: str, opener: str) -> Iterator[Any]:
    """Yield each complete, valid top-level JSON value opened by ``opener``."""
    pos = text.find(opener)
    while pos != -1:
        end = balanced_end(text, pos)
        value = _loads(text[pos:end]) if end is not None else _NOTHING
        if value is _NOTHING:
            pos = text.find(opener, pos + 1)
            continue
        yield value
        pos = text.find(opener, end)


def balanced_end(text: str, start: int) -> int | None:
    """Return the index just past the bracket matching ``text[start]``.

    Brackets inside JSON strings (with backslash escapes) are skipped. Returns
    None when the value is never closed or a bracket is mismatched.
    """
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
    return None


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    # A trailing comma is the one slip worth mending silently; it is unambiguous.
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", candidate))
    except json.JSONDecodeError:
        return _NOTHING


def _diagnose(text: str) -> str:
    """Explain why no JSON value was found, quoting the decoder where useful."""
    starts = [i for i in (text.find("{"), text.find("[")) if i != -1]
    if not text:
        return "the reply is empty (after removing <think> blocks)"
    if not starts:
        return "the reply contains no JSON object"
    start = min(starts)
    end = balanced_end(text, start)
    if end is None:
        return (
            f"the JSON value starting at character {start} is never closed "
            "(or its brackets do not match)"
        )
    try:
        json.loads(text[start:end])
    except json.JSONDecodeError as err:
        return f"the JSON value starting at character {start} is invalid: {err}"
    return "the reply contains no valid JSON value"
