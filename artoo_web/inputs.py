"""The checks that submitted text passes on every road in: the API and the forms.

A body that is not UTF-8, a JSON document Python cannot hold (a number of
thousands of digits, arrays nested thousands deep) and a string the database
cannot store (a lone surrogate such as ``"\\ud800"``) are the sender's mistakes:
each is an ``InputError`` with a message, answered 400, never a 500.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from django.http import HttpRequest, RawPostDataException

# Far beyond any id or count the API takes, far below Python's 4300-digit limit.
MAX_INT_DIGITS = 100
MAX_ANSWER_CHARS = 20_000


class InputError(ValueError):
    """The request's content is malformed; the message says how."""


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise InputError(f"A number in the body has more than {MAX_INT_DIGITS} digits.")
    return int(digits)


def _refuse_constant(name: str):
    raise InputError(f"The body is not valid JSON: {name} is not a JSON number.")


def parse_json(raw: bytes):
    """Return the JSON document in ``raw`` (an empty body is ``{}``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("The body is not valid UTF-8.") from None
    try:
        return json.loads(
            text or "{}", parse_int=_parse_int, parse_constant=_refuse_constant
        )
    except json.JSONDecodeError as exc:
        raise InputError(f"The body is not valid JSON: {exc.msg}.") from None
    except RecursionError:
        raise InputError("The body is nested too deeply.") from None


def check_text(name: str, value: str) -> str:
    """Return ``value`` if it is storable text, else raise InputError naming it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        raise InputError(
            f"'{name}' is not valid text: it holds a lone surrogate (U+{ord(bad):04X})."
        ) from None
    return value


def answer_problem(answer: str) -> str:
    """Return why a clarification answer is refused, or "" when it is fine."""
    if "\x00" in answer or len(answer) > MAX_ANSWER_CHARS:
        return f"The answer must be text of at most {MAX_ANSWER_CHARS:,} characters."
    return ""


def is_utf8_form(request: HttpRequest) -> bool:
    """Return False when a form's fields are not UTF-8 (Django would store U+FFFD).

    Only a urlencoded body is checked: it is what the pages send.
    """
    if request.content_type != "application/x-www-form-urlencoded":
        return True
    try:
        raw = request.body
    except RawPostDataException:
        return True
    try:
        parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        return False
    return True
