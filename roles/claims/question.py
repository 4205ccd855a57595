"""What a request asks for: the ``Question`` the claims engine judges an answer by.

R1 states it as the ``asks`` field of the TaskSpec, through the structured
output it already uses; ``read_question`` reads it from the request's words only
when R1 gave none (an endpoint without structured outputs, the offline model, a
fallback spec)::

    Question(answer="count", count_of="distinct", subject="IP addresses in access.log")
    Question(answer="effect", effect="write", paths=["/srv/report.txt"])

``answer`` is the form the answer takes; ``count_of`` what a count counts;
``matching`` the word or pattern counted lines hold, when the request states
one; ``excluding`` what a count leaves out that the request names (the
header, comments, blank lines); ``field`` the column or key a total or value
is of; ``paths`` the files the request names as what it makes or changes;
``effect`` what it does to them; ``depth`` how deep a question about a
directory's files looks, ``path_kind`` whether it asks for a file or a
directory, and ``order_key`` and ``order_end`` the extreme it asks for (the
newest, the largest, the most lines), when its words say.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from roles.claims.question_words import (
    ALL_LINES,
    asks_for_count,
    asks_for_file_count,
    asks_for_sum,
    counted_noun,
    counted_word,
    depth,
    excluded,
    order_asked,
    path_kind,
)
from roles.contract_base import Contract

__all__ = ["ANSWERS", "Question", "change_asked", "question_for", "read_question"]

Answer = Literal[
    "number", "count", "total", "path", "name", "names", "yes_no", "value",
    "effect", "text",
]  # fmt: skip
CountOf = Literal["", "lines", "matches", "files", "distinct", "words", "rows"]
OrderKey = Literal[
    "", "modified", "accessed", "size", "lines", "words", "name", "content"
]  # fmt: skip
Effect = Literal["", "write", "create", "rename", "move", "delete", "change"]
ANSWERS: tuple[str, ...] = Answer.__args__  # type: ignore[attr-defined]
# The answers that are one number: a rule of numbers judges them.
NUMERIC = ("number", "count", "total")
# The answers a count_of applies to: a count, or a number R1 did not call one.
COUNTED_ANSWERS = ("count", "number")
PATHS_LIMIT = 20


class Question(Contract):
    """What a request asks for, in a form code can check an answer against."""

    answer: Answer = "text"
    subject: str = Field(default="", max_length=300)
    count_of: CountOf = ""
    matching: str = Field(default="", max_length=200)
    excluding: str = Field(default="", max_length=200)
    field: str = Field(default="", max_length=200)
    paths: list[str] = Field(default_factory=list, max_length=PATHS_LIMIT)
    effect: Effect = ""
    # How deep a question about a directory's files looks (``top``: only the
    # files directly in it; ``all``: its subdirectories' too), from the
    # request's words; not in R1's schema.
    depth: SkipJsonSchema[Literal["", "top", "all"]] = ""
    # The kind of entry a question about a path asks for (a directory or a
    # file), from the request's words; not in R1's schema.
    path_kind: SkipJsonSchema[Literal["", "file", "directory"]] = ""
    # The key of the extreme asked ("the newest file": ``modified``; "the
    # most lines": ``lines``; "the highest timeout": ``content``) and its
    # end, from the request's words; not in R1's schema.
    order_key: SkipJsonSchema[OrderKey] = ""
    order_end: SkipJsonSchema[Literal["", "max", "min"]] = ""
    # "model" when R1 stated it, "text" when read from the request's words.
    source: Literal["model", "text"] = "model"

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_word(cls, value: Any) -> Any:
        # Models write "yes/no", "Count" or "file path"; the kind is the same.
        if isinstance(value, str):
            word = re.sub(r"[\s/-]+", "_", value.strip().lower())
            return ALIASES.get(word, word)
        return value

    @field_validator("count_of", "effect", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        if value is None:
            return ""
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("paths", mode="before")
    @classmethod
    def _absolute_paths(cls, value: Any) -> Any:
        # Only an absolute path names a file the filesystem can be asked about.
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            paths = [p.strip().strip("'\"`") for p in value if isinstance(p, str)]
            return [p for p in paths if _is_path(p)]
        return value

    @model_validator(mode="after")
    def _count_of_a_count(self) -> Question:
        # What a count counts belongs to a count: R1 wrote count_of "files"
        # for "the total size in bytes of all the files", and the answer, a
        # sum of sizes, was refused as not a number of files.
        if self.answer not in COUNTED_ANSWERS and self.count_of:
            self.count_of = ""
        return self

    @property
    def numeric(self) -> bool:
        """True when the answer is one number (a count, a total, a number)."""
        return self.answer in NUMERIC


ALIASES = {
    "yes_or_no": "yes_no", "yesno": "yes_no", "boolean": "yes_no", "bool": "yes_no",
    "file_path": "path", "filename": "path", "file": "path", "directory": "path",
    "integer": "number", "int": "number", "float": "number", "quantity": "number",
    "sum": "total", "average": "total", "mean": "total", "how_many": "count",
    "list": "names", "list_of_names": "names", "key_value": "value",
    "free_text": "text", "string": "text", "action": "effect",
}  # fmt: skip


def _is_path(text: str) -> bool:
    text = text.strip()
    return text.startswith("/") and "\n" not in text and not set("*?[") & set(text)


# --- the fallback: the request's words ------------------------------------

YES_NO = re.compile(
    r"^\s*(?:is|are|does|do|did|has|have|can|was|were|will|should)\b", re.I
)
# A request that opens with a question word asks something; one that opens
# with a verb asks for an effect.
ASKING = re.compile(
    r"^\s*(?:how|what|which|where|who|whose|when|why|is|are|does|do|did|has|"
    r"have|can|was|were|will|should)\b",
    re.I,
)
NAMES = re.compile(
    r"\b(?:which|what|list|name)\s+(?:\w+\s+){0,2}"
    r"(?:users|names|hosts|files|functions|keys|packages|services|accounts)\b",
    re.I,
)
PATH_ASKED = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,2}(?:file|path|directory|folder)\b"
    r"|\bwhere\s+is\b",
    re.I,
)
VALUE_ASKED = re.compile(
    r"\bwhat\s+is\s+(?:the\s+)?(?:value\s+of\s+)?`?[A-Za-z_][\w.-]*_[\w.-]*`?", re.I
)
# "Which host is the slowest?", "who owns …": one thing named, when the words
# ask for no count, list, path or value.
ONE_NAME = re.compile(r"\b(?:which|who|whose)\b", re.I)
DISTINCT = re.compile(r"\b(?:distinct|unique|different)\b", re.I)
EFFECTS = (
    ("delete", re.compile(r"\b(?:delete|remove|erase|unlink)\b", re.I)),
    ("rename", re.compile(r"\brename\b", re.I)),
    ("move", re.compile(r"\bmove\b", re.I)),
    ("write", re.compile(r"\b(?:write|save|store|export|dump)\b", re.I)),
    ("create", re.compile(r"\b(?:create|make|generate|produce|touch)\b", re.I)),
    ("change", re.compile(r"\b(?:change|edit|set|update|replace|fix|modify)\b", re.I)),
)
FILE_NAME = re.compile(r"[\w.-]+\.[A-Za-z0-9]{1,5}")
PATH = re.compile(r"""(?<![\w.~])/[^\s'"`,;()<>|]+""")


def read_question(text: str) -> Question:
    """Return the Question the words of ``text`` state (the fallback reading)."""
    text = text or ""
    effect = next((name for name, verb in EFFECTS if verb.search(text)), "")
    paths = [p.rstrip(".:!?") for p in PATH.findall(text)][:PATHS_LIMIT]
    base: dict[str, Any] = {
        "source": "text",
        "subject": " ".join(text.split())[:300],
        "depth": depth(text),
        "path_kind": path_kind(text),
    }
    base["order_key"], base["order_end"] = order_asked(text)
    if effect and not ASKING.search(text) and (paths or _leads(text, effect)):
        return Question(answer="effect", effect=effect, paths=paths, **base)
    if asks_for_count(text) and not asks_for_sum(text):
        return Question(
            answer="count", count_of=_count_of(text), matching=counted_word(text),
            excluding=excluded(text), **base,
        )  # fmt: skip
    if asks_for_sum(text):
        return Question(answer="total", **base)
    if YES_NO.search(text):
        return Question(answer="yes_no", **base)
    if NAMES.search(text):
        return Question(answer="names", **base)
    if PATH_ASKED.search(text):
        return Question(answer="path", **base)
    if VALUE_ASKED.search(text):
        return Question(answer="value", **base)
    if ONE_NAME.search(text):
        return Question(answer="name", **base)
    return Question(answer="text", **base)


def change_asked(asks: Question | None) -> Question:
    """Return the Question of a request whose caller needs files changed (a
    project's task: QA judges the files it changed, and no change is no work).

    R1's own stands when it asks for an effect; any other reading becomes a
    change of the files it names, so an answer whose every call only read is
    refused by the effect rule whatever R1 called the request.
    """
    if asks is not None and asks.answer == "effect" and asks.effect:
        return asks
    subject = asks.subject if asks is not None else ""
    paths = asks.paths if asks is not None else []
    return Question(answer="effect", effect="change", subject=subject, paths=paths)


def _leads(text: str, effect: str) -> bool:
    """True when the request opens with its effect's verb ("Write a script …")."""
    head = " ".join(re.findall(r"[^\W\d]+", text)[:3])
    return dict(EFFECTS)[effect].search(head) is not None


def _count_of(text: str) -> str:
    if asks_for_file_count(text):
        return "files"
    if DISTINCT.search(text):
        return "distinct"
    if counted_word(text):
        return "matches"
    if ALL_LINES.search(text):
        return "lines"
    return counted_noun(text)


def question_for(asks: Question | None, request: str) -> Question:
    """Return R1's Question when it gave one, else the one the request's words state.

    The paths a Question names come from the request itself: a path R1 wrote
    that the request does not hold is dropped (R1 restates, it does not invent),
    and so is a ``matching`` word that is not one for a count of matching lines.
    The paths of an effect are kept only when the request's words ask for one:
    code then demands the change, and a small model's misreading must not.
    Where the request's words plainly state an answer kind other than R1's,
    the words win, and where they plainly ask how many, so does what they say
    is counted (nothing, when they name no kind); R1's stands where the words
    state none (a rephrased or non-English request).
    """
    if asks is None:
        return read_question(request)
    kept = [p for p in asks.paths if p in request or p.rstrip("/") in request]
    words = read_question(request)
    if asks.answer == "effect" and words.answer != "effect":
        # An effect code would demand must be one the request's words make.
        kept = []
    update: dict[str, Any] = {
        "paths": kept,
        "matching": _matching(asks, request),
        "excluding": _excluding(asks, words, request),
        "depth": words.depth,
        "path_kind": words.path_kind,
        "order_key": words.order_key,
        "order_end": words.order_end,
    }
    if words.answer != "text" and words.answer != asks.answer:
        # The words plainly state another kind: a small R1 misnames kinds (a
        # list of services called a path), and the words are the user's.
        # What belongs to the kind comes with it: a change R1 called a value
        # kept no effect, and code never checked the file was changed.
        update |= {
            "answer": words.answer,
            "count_of": words.count_of,
            "effect": words.effect,
            "paths": kept or words.paths,
        }
    elif words.answer == "count" == asks.answer and not _narrower(asks, words):
        # What a count counts is the words' where they plainly ask how many: a
        # small R1 calls accounts "files", and code then refuses answers by it.
        update["count_of"] = words.count_of
    return Question.model_validate({**asks.model_dump(), **update})


def _excluding(asks: Question, words: Question, request: str) -> str:
    """Return what a count leaves out: R1's, when the request holds its words
    (R1 restates, it does not invent: a count of every line must not be
    refused for an exclusion nobody asked), else the words'."""
    said = [w for w in re.findall(r"[^\W\d_]{3,}", asks.excluding) if w != "the"]
    if said and all(w.lower() in request.lower() for w in said):
        return asks.excluding.strip()
    return words.excluding


def _narrower(asks: Question, words: Question) -> bool:
    """True when R1 names a narrower count of lines (matching or distinct
    ones) than the words' plain lines or rows: the narrower kind stands."""
    return words.count_of in ("lines", "rows") and asks.count_of in (
        "matches",
        "distinct",
    )


def _matching(asks: Question, request: str) -> str:
    """Return the word counted lines hold, when R1's is one the request states
    for a count of matching lines; a file's name is what is counted, not a
    word to look for ("How many lines does data.txt have?")."""
    word = asks.matching.strip()
    if asks.count_of != "matches" or not word or word not in request:
        return ""
    if (
        "/" in word
        or FILE_NAME.fullmatch(word)
        or any(p.endswith("/" + word) for p in PATH.findall(request))
    ):
        return ""
    return word
