"""Success criteria and the machine checks that state them.

A criterion is a string or ``{"criterion": "...", "mode": "verifiable",
"check": {"type": "output_contains", "value": "ok"}}``; small models' shapes
are mended into that one by ``criterion_fields`` before validation.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from roles.contract_base import Contract, Mode, NonEmpty

CheckType = Literal[
    "exit_code", "output_contains", "output_matches", "file_exists", "json_field",
    "answer_form",
]  # fmt: skip
CHECK_TYPES: frozenset[str] = frozenset(CheckType.__args__)
# The check that the answer is in the form the request's Question asks.
FORM_CHECK = "answer_form"
# The one criterion of a subtask whose planner wrote none: its intent is done.
DONE = "the subtask is done: "
CHECK_PARAMS: dict[str, tuple[str, ...]] = {
    "exit_code": ("value",),
    "output_contains": ("value",),
    "output_matches": ("pattern",),
    "file_exists": ("path",),
    "json_field": ("path",),
    # The answer is in the form the request's Question asks (code's, never R2's).
    "answer_form": (),
}


class Criterion(Contract):
    """A success criterion: the assertion, how it is judged, an optional check.

    ``check`` is a machine check R4a evaluates in code, e.g.
    ``{"type": "output_contains", "value": "ok"}``.
    """

    criterion: NonEmpty
    mode: Mode = "verifiable"
    check: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _text_from_check(cls, value: Any) -> Any:
        return criterion_fields(value)

    @field_validator("check")
    @classmethod
    def _check_has_known_type(cls, check: dict[str, Any] | None):
        if check is not None and check.get("type") not in CHECK_TYPES:
            allowed = ", ".join(sorted(CHECK_TYPES))
            raise ValueError(f"check type must be one of {allowed}")
        return check


CriterionSpec = Annotated[str, Field(min_length=1)] | Criterion


def describe_check(check: Any) -> str:
    """Return the assertion a machine check states, or "" when it states none.

    ``{"type": "output_matches", "pattern": "ok$"}`` states ``output matches
    /ok$/``; a check of an unknown type or without its parameter states nothing.
    """
    if not isinstance(check, dict):
        return ""
    params = CHECK_PARAMS.get(check.get("type"))
    if params is None or any(check.get(p) is None for p in params):
        return ""
    kind = check["type"]
    if kind == "answer_form":
        return "the answer is in the form the request asks"
    if kind == "exit_code":
        return f"exit code is {_shown(check['value'])}"
    if kind == "output_contains":
        return f"output contains {_shown(check['value'])}"
    if kind == "output_matches":
        return f"output matches /{check['pattern']}/"
    if kind == "file_exists":
        return f"file {check['path']} exists"
    if "value" in check:
        return f"output field {check['path']} equals {_shown(check['value'])}"
    return f"output has the field {check['path']}"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def criterion_fields(value: Any) -> Any:
    """Return a criterion object with the text its check states, when it lacks one.

    Small models write a bare check where a criterion belongs, a check beside
    no text, or the check's keys beside the text; each check is kept as the
    model wrote it and the text is only ever what that check asserts. Anything
    else is returned unchanged for validation to judge.
    """
    if not isinstance(value, dict):
        return value
    value = _mend_param(_lower_mode(value))
    if isinstance(value.get("check"), dict):
        value = {**value, "check": _mend_param(value["check"])}
    text = value.get("criterion")
    if isinstance(text, str) and text.strip():
        if "check" not in value and describe_check(value):
            own = {k: v for k, v in value.items() if k in ("criterion", "mode")}
            check = {k: v for k, v in value.items() if k not in own}
            return {**own, "check": check}
        return value
    if describe_check(value):
        return {"criterion": describe_check(value), "check": value}
    stated = describe_check(value.get("check"))
    return {**value, "criterion": stated} if stated else value


# "output_contains 'hello'", "output_matches, 'ok$'", "file_exists(out.txt)":
# a check written as text, its type name first and its one value after it.
_CHECK_TEXT = re.compile(
    r"^\s*(output_contains|output_matches|file_exists|exit_code)\s*[,:(=]?\s*"
    r"(?:(['\"`])(?P<quoted>.+)\2|(?P<bare>[^\s'\"`]+?))\s*\)?\s*\.?\s*$",
    re.DOTALL,
)


def check_from_text(text: str) -> str | dict[str, Any]:
    """Return a criterion with its check when ``text`` is a check written as
    text, else ``text`` unchanged. ``exit_code`` takes only an integer."""
    found = _CHECK_TEXT.match(text) if isinstance(text, str) else None
    if found is None:
        return text
    kind, value = found.group(1), found.group("quoted") or found.group("bare")
    if kind == "exit_code":
        if not re.fullmatch(r"-?\d+", value):
            return text
        value = int(value)
    check = {"type": kind, CHECK_PARAMS[kind][0]: value}
    return {"criterion": describe_check(check), "check": check}


# A small model gives output_matches the parameter of output_contains, and the
# other way round: {"type": "output_matches", "value": "lines"} means /lines/.
_SWAPPED = {
    "output_matches": ("pattern", "value"),
    "output_contains": ("value", "pattern"),
}


def _mend_param(check: dict[str, Any]) -> dict[str, Any]:
    """Return ``check`` with its one parameter under its own name when only the
    other text check's name holds it."""
    want, given = _SWAPPED.get(check.get("type"), ("", ""))
    if not want or check.get(want) is not None or not isinstance(check.get(given), str):
        return check
    mended = {k: v for k, v in check.items() if k != given}
    return {**mended, want: check[given]}


def _lower_mode(value: dict[str, Any]) -> dict[str, Any]:
    mode = value.get("mode")
    if not isinstance(mode, str) or mode == mode.strip().lower():
        return value
    return {**value, "mode": mode.strip().lower()}


def normalise_criterion(value: str | dict[str, Any] | Criterion) -> Criterion:
    """Return ``value`` as a Criterion; a plain string is a verifiable criterion."""
    if isinstance(value, Criterion):
        return value
    if isinstance(value, str):
        return Criterion(criterion=value)
    if isinstance(value, dict):
        return Criterion.model_validate(value)
    raise TypeError(f"criterion must be a str or a dict, not {type(value).__name__}")
