"""The shapes of model replies: the schema asked for and the shapes accepted.

``reply_schema`` gives a reply model's JSON schema for an OpenAI
``response_format`` of type ``json_schema`` (llama.cpp's server honours it).

``Reply`` is the base of the reply models. Before validation it mends what
small models write where the meaning is unambiguous, field by field:

- a text field given an object or a list holds its compact JSON (a list of one
  string holds that string, an empty object or list holds ""), a number its JSON;
- a list field given one value holds a list of that value ("" or {} hold none);
- null in a field that refuses null and has a default gives the default.

``"true"`` and ``"2"`` where a bool or an int belongs are pydantic's own lax
parsing. Example: ``{"context": {"path": "a.txt"}, "success_criteria": "ok"}``
reads as ``{"context": '{"path":"a.txt"}', "success_criteria": ["ok"]}``.
"""

from __future__ import annotations

import json
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, model_validator

from roles.contracts import CHECK_TYPES, Contract, criterion_fields
from roles.criteria import check_from_text

DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})
# Docstrings are written for engineers; in a prompt they only cost tokens.
DROPPED_KEYWORDS = frozenset({"title", "description"})
# A small model decoding against a schema can fall into repeating one array item
# ("output_matches", "output_matches", …) until its token limit cuts the reply
# off as invalid JSON. Every array of a reply schema that sets no bound of its
# own is bounded, so the grammar closes the array instead.
MAX_ITEMS = 16


class Reply(Contract):
    """Base of the reply models: mend small-model shapes, then validate."""

    @model_validator(mode="before")
    @classmethod
    def _small_model_shapes(cls, value: Any) -> Any:
        return normalise_fields(cls, value)


def normalise_fields(model_cls: type[BaseModel], data: Any) -> Any:
    """Return ``data`` with each of ``model_cls``'s fields mended to its shape."""
    if not isinstance(data, dict):
        return data
    mended = dict(data)
    for name, info in model_cls.model_fields.items():
        if name not in mended:
            continue
        value, shape = mended[name], _shape(info.annotation)
        if value is None and not info.is_required() and not _allows_none(info):
            del mended[name]
        elif shape == "text":
            mended[name] = as_text(value)
        elif shape == "list":
            mended[name] = as_list(value)
        elif shape == "text list":
            items = as_list(value)
            mended[name] = [as_text(v) for v in items] if items else items
    return mended


def as_text(value: Any) -> Any:
    """Return ``value`` as a text field's string; None and strings pass through."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if value in ([], {}):
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def as_list(value: Any) -> Any:
    """Return ``value`` as a list field's items; one value is a list of one."""
    if value is None or isinstance(value, list):
        return value
    if value in ("", {}):
        return []
    return [value]


def keep_criteria(values: Any, where: str) -> tuple[list[Any], list[str]]:
    """Return the criteria that state something, and a note on each one dropped.

    A criterion object with neither text nor a recognisable check states
    nothing and is dropped; a check of an unknown type beside a text is dropped
    and the text kept. Nothing is ever invented in their place.
    """
    kept: list[Any] = []
    notes: list[str] = []
    for item in as_list(values) or []:
        item = criterion_fields(item)
        if item is None or (isinstance(item, str) and not item.strip()):
            notes.append(f"{where}: dropped an empty criterion")
            continue
        item = check_from_text(item) if isinstance(item, str) else item
        if not isinstance(item, dict):
            kept.append(item)
            continue
        text = as_text(item.get("criterion"))
        if not isinstance(text, str) or not text.strip():
            notes.append(f"{where}: dropped a criterion stating nothing: {_j(item)}")
            continue
        item = {**item, "criterion": text}
        check = item.get("check")
        if check is not None and not _is_known_check(check):
            notes.append(f"{where}: dropped the unknown check {_j(check)} of {text!r}")
            item = {k: v for k, v in item.items() if k != "check"}
        kept.append(item)
    return kept, notes


def _is_known_check(check: Any) -> bool:
    return isinstance(check, dict) and check.get("type") in CHECK_TYPES


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _shape(annotation: Any) -> str:
    """Return "text", "list", "text list" or "" for a field's annotation."""
    annotation = _bare(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        others = [a for a in get_args(annotation) if a is not type(None)]
        return "text" if others == [str] else ""
    if annotation is str:
        return "text"
    if get_origin(annotation) is list:
        items = get_args(annotation)
        return "text list" if items and _bare(items[0]) is str else "list"
    return ""


def _bare(annotation: Any) -> Any:
    if get_origin(annotation) is Annotated:
        return get_args(annotation)[0]
    return annotation


def _allows_none(info: Any) -> bool:
    annotation = info.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        return type(None) in get_args(annotation)
    return annotation is Any or annotation is None


def reply_schema(model_cls: type[BaseModel]) -> dict[str, Any]:
    """Return ``model_cls``'s JSON schema for a ``json_schema`` response format.

    The ``$defs`` are inlined (a reply model is not recursive; a recursive one
    raises ValueError) and titles and descriptions dropped, so the schema is one
    self-contained object; every array without a bound of its own gets
    ``maxItems`` ``MAX_ITEMS``; pass it as ``{"type": "json_schema", "json_schema":
    {"name": …, "schema": reply_schema(PlanReply)}}``.
    """
    schema = model_cls.model_json_schema()
    defs = schema.pop("$defs", {})
    return _inline(schema, defs, ())


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"the schema of {name} is recursive")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**defs[name], **rest}, defs, (*seen, name))
    out: dict[str, Any] = {}
    if node.get("type") == "array" and "maxItems" not in node:
        out["maxItems"] = MAX_ITEMS
    for key, value in node.items():
        if key in DROPPED_KEYWORDS:
            continue
        if key in DATA_KEYWORDS:
            out[key] = value
        elif key == "properties":
            out[key] = {n: _inline(s, defs, seen) for n, s in value.items()}
        else:
            out[key] = _inline(value, defs, seen)
    return out
