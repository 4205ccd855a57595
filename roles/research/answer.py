"""A research answer, and the rule that keeps it to what the tools showed.

The sub-agent replies ``{"answer": "...", "sources": ["path:12-30", ...]}``
(or prose citing ``path:line``). Like R4a's evidence rule
(``roles.agent_validator_judge.unsupported`` and ``roles.claims.evidence_rules``), an
answer stands only when a tool call succeeded, at least one citation names
lines a tool showed, and every number or path it states appears in what the
tools showed; otherwise the answer is "not found", with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from roles.claims.facts import FACT, appears
from roles.llm.client import Usage
from roles.llm.jsonparse import JSONExtractError, extract_json, strip_think
from roles.toolloop import ToolCallRecord
from roles.tools.records import head_tail

NOT_FOUND = "not found"
SAID_NOT_FOUND = "the tools did not show the answer"
EVIDENCE_SHOWN = 12
# Abbreviations FACT reads as a file name ("e.g") but no answer invents.
ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs"})
CITE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]+|(?:[\w.-]+/)+[\w.-]+)"
    r"(?::(\d+)(?:\s*[-–]\s*(\d+))?)?"
)


@dataclass(frozen=True)
class Citation:
    """A file, and optionally a line range of it, that an answer rests on."""

    path: str
    start: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        if self.start is None:
            return self.path
        if self.end is None or self.end == self.start:
            return f"{self.path}:{self.start}"
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True)
class ResearchAnswer:
    """What one research call found: the answer, or "not found" and why.

    ``status`` is ``answered``, ``not_found`` or ``exhausted`` (the turn
    budget ran out); ``evidence`` holds the cited lines the tools showed, and
    ``searched`` the tool calls made, so a caller does not repeat them.
    """

    kind: str
    query: str
    status: str
    answer: str
    evidence: tuple[Citation, ...] = ()
    searched: tuple[str, ...] = ()
    turns: int = 0
    usage: Usage = field(default_factory=Usage)

    def as_tool_output(self) -> str:
        """Return the answer as the calling model sees it."""
        if self.status == "answered":
            cited = "\n".join(f"- {c}" for c in self.evidence)
            return f"{self.answer}\n\nEvidence (lines the tools showed):\n{cited}"
        searched = "; ".join(self.searched[:8]) or "nothing"
        return f"{self.answer}\nSearched: {searched}"


def parse_reply(text: str) -> tuple[str, list[str]]:
    """Return the answer and its listed sources from a final reply."""
    try:
        value = extract_json(text)
    except JSONExtractError:
        value = None
    if isinstance(value, Mapping) and isinstance(value.get("answer"), str):
        sources = value.get("sources")
        listed = sources if isinstance(sources, list) else []
        return value["answer"].strip(), [str(s) for s in listed if s]
    return strip_think(text).strip(), []


def citations(texts: Iterable[str], relative: Callable[[str], str | None]) -> list:
    """Return every ``path`` or ``path:line[-line]`` named in ``texts``."""
    found: list[Citation] = []
    for text in texts:
        for match in CITE.finditer(text):
            path = relative(match.group(1))
            if path is None or match.group(1).lower() in ABBREVIATIONS:
                continue
            start = int(match.group(2)) if match.group(2) else None
            end = int(match.group(3)) if match.group(3) else start
            found.append(Citation(path, start, end))
    # A file named bare where its lines are cited too adds nothing.
    lined = {c.path for c in found if c.start is not None}
    kept = [c for c in found if c.start is not None or c.path not in lined]
    return list(dict.fromkeys(kept))


def is_shown(citation: Citation, shown: Mapping[str, set[int]]) -> bool:
    """Return True when a tool showed the cited file (and one of its lines)."""
    lines = shown.get(citation.path)
    if lines is None:
        return False
    if citation.start is None:
        return True
    end = citation.end if citation.end is not None else citation.start
    if end < citation.start or end - citation.start > 10_000:
        return False
    return any(n in lines for n in range(citation.start, end + 1))


def judge_reply(
    reply: str,
    *,
    calls: Sequence[ToolCallRecord],
    shown: Mapping[str, set[int]],
    relative: Callable[[str], str | None],
    known: str,
) -> tuple[str, str, tuple[Citation, ...]]:
    """Return why ``reply`` cannot stand ("" when it can), its answer and the
    citations of it that the tools showed.

    ``known`` is every text the tools returned plus the question itself.
    """
    answer, sources = parse_reply(reply)
    if not calls:
        return "no tool was called", answer, ()
    if all(c.error for c in calls):
        return "no tool call succeeded", answer, ()
    if not answer or answer.lower().startswith(NOT_FOUND):
        return SAID_NOT_FOUND, answer, ()
    cited = citations([*sources, answer], relative)
    backed = tuple(c for c in cited if is_shown(c, shown))
    if not backed:
        return "the answer cites no file and line the tools showed", answer, ()
    stated = CITE.sub(lambda m: m.group(1), answer)
    invented = [
        fact
        # A path that ends a sentence takes its full stop along: drop it.
        for fact in dict.fromkeys(f.rstrip(".") for f in FACT.findall(stated))
        if not appears(fact, known)
        and fact.lower() not in ABBREVIATIONS
        and not (fact.isdigit() and len(fact) == 1)
    ]
    if invented:
        named = ", ".join(repr(f) for f in invented[:5])
        return f"the answer states {named}, which no tool output shows", answer, backed
    return "", answer, backed


def searched(calls: Sequence[ToolCallRecord]) -> tuple[str, ...]:
    """Return each tool call as ``tool {args}``, for a "not found" answer."""
    return tuple(
        f"{c.name} {head_tail(json.dumps(dict(c.args), ensure_ascii=False), 120)}"
        + (" (failed)" if c.error else "")
        for c in calls
    )
