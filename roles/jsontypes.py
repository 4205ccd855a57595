"""What a json_field check means when R2 writes a type, not a value.

A small planner writes ``{"type": "json_field", "path": "lines", "value":
{"type": "number"}}`` (or ``"value": "number"``): read literally, no answer
equals it, and a correct ``{"lines": 58}`` fails. As ``roles.claims.checks`` reads a
pattern "number" as ``\\d+``, a value that only names a JSON type asks for a
value of that type. And a small executor wraps its answer
(``{"json_field": {"lines": 58}}``): ``nested`` finds a field at any depth.
"""

from __future__ import annotations

import json
from typing import Any

from roles.claims.facts import output_text
from roles.llm.jsonparse import extract_json

TYPES = {
    "number": "number",
    "float": "number",
    "double": "number",
    "integer": "integer",
    "int": "integer",
    "string": "string",
    "str": "string",
    "text": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
}
DEPTH = 4


def type_named(want: Any) -> str | None:
    """Return the JSON type ``want`` names ("number", {"type": "number"},
    "<integer>"), or None when it is a value."""
    if isinstance(want, dict) and set(want) == {"type"}:
        want = want["type"]
    if not isinstance(want, str):
        return None
    return TYPES.get(want.strip().strip("<>").strip().lower())


def of_type(value: Any, kind: str) -> bool:
    """Return True when ``value`` is of the JSON type ``kind``; a number may
    come as its digits in a string ("58")."""
    if isinstance(value, bool):
        return kind == "boolean"
    if kind in ("number", "integer") and isinstance(value, str):
        value = _number(value)
    if kind == "number":
        return isinstance(value, int | float)
    if kind == "integer":
        return isinstance(value, int) or (
            isinstance(value, float) and value.is_integer()
        )
    wanted = {"string": str, "array": list, "object": dict}.get(kind)
    return wanted is not None and isinstance(value, wanted)


def nested(value: Any, key: str, depth: int = DEPTH) -> list[Any]:
    """Return the values of every field named ``key`` in ``value``'s objects,
    ``depth`` levels down at most."""
    if depth < 0:
        return []
    found = []
    if isinstance(value, dict):
        for name, inner in value.items():
            if name == key:
                found.append(inner)
            else:
                found += nested(inner, key, depth - 1)
    elif isinstance(value, list):
        for inner in value:
            found += nested(inner, key, depth - 1)
    return found


def _number(text: str) -> int | float | None:
    text = text.strip().replace(",", "")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def output_json(output: Any) -> Any:
    """Return an ExecutionResult output as JSON: as it is when it is already
    data, else parsed from its text (the first JSON value in it)."""
    if isinstance(output, dict | list):
        return output
    text = output_text(output).strip()
    if not text:
        raise ValueError("the output is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return extract_json(text)
