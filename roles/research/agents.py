"""The research sub-agents ``explain_code`` and ``ask``: a tool loop each.

Each call brings the repository's index up to date, then lets the model
search, grep, glob and read (``roles.research.toolbox``) for a small number of
turns and judges its final reply by ``roles.research.answer``: a reply that
fails the evidence rule goes back once while turns remain, and then stands as
"not found" with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from roles.llm.client import LLMClient
from roles.research.answer import (
    EVIDENCE_SHOWN,
    NOT_FOUND,
    SAID_NOT_FOUND,
    ResearchAnswer,
    judge_reply,
    searched,
)
from roles.research.index import RepoIndex
from roles.research.toolbox import ResearchToolbox
from roles.toolloop import run_tool_loop
from roles.tools.errors import ToolError

QUERY_CHARS = 1000
FINAL_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "string"}, "maxItems": 12},
    },
    "required": ["answer", "sources"],
}
COMMON = (
    "You research the code repository at {root} ({files} text files) with "
    "read-only tools: search_index (ranked lines for words: start here), grep "
    "(a regular expression), glob (file names) and read_file (numbered lines). "
    "Use only what the tools show: never guess a name, path, value or line. "
    "When you have the answer, reply with only this JSON, no tool call:\n"
    '{{"answer": "...", "sources": ["path:start-end", ...]}}\n'
    "Each source is a file and lines a tool showed you. If the tools do not "
    'show the answer, reply {{"answer": "not found", "sources": []}}.'
)


@dataclass(frozen=True)
class Kind:
    """One research sub-agent: its task, answer size and turn budget."""

    name: str
    task: str
    answer_chars: int
    max_turns: int


KINDS = {
    "explain_code": Kind(
        "explain_code",
        "Explain how the code the question names works: the key files, classes "
        "and functions, what they do, and what they connect to. Read the code "
        "before explaining it. Answer in at most {chars} characters.",
        answer_chars=1500,
        max_turns=8,
    ),
    "ask": Kind(
        "ask",
        "Answer the factual question about the repository (where something is "
        "defined, which files use something, what a setting is) briefly and "
        "exactly, in at most {chars} characters.",
        answer_chars=500,
        max_turns=6,
    ),
}
REVIEW = (
    "Your answer cannot be used: {reason}. Search or read more if turns remain, "
    "then give the JSON answer again with sources naming lines the tools showed, "
    'stating only what they showed; or reply {{"answer": "not found", '
    '"sources": []}}.'
)


def explain_code(
    query: str, *, index: RepoIndex, client: LLMClient, max_turns: int | None = None
) -> ResearchAnswer:
    """Explain how something in the repository's code works, citing lines."""
    return research(
        "explain_code", query, index=index, client=client, max_turns=max_turns
    )


def ask(
    query: str, *, index: RepoIndex, client: LLMClient, max_turns: int | None = None
) -> ResearchAnswer:
    """Answer a factual question about the repository, citing lines."""
    return research("ask", query, index=index, client=client, max_turns=max_turns)


def research(
    kind: str,
    query: str,
    *,
    index: RepoIndex,
    client: LLMClient,
    max_turns: int | None = None,
) -> ResearchAnswer:
    """Run the ``kind`` sub-agent on ``query`` and return its judged answer.

    Raises ToolError for an unknown kind or an empty or oversized query, before
    the index or the model is touched.
    """
    spec = KINDS.get(kind)
    if spec is None:
        raise ToolError(f"unknown research tool {kind!r}; use {', '.join(KINDS)}")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty string")
    if len(query) > QUERY_CHARS:
        raise ToolError(f"query must be at most {QUERY_CHARS} characters")
    query = query.strip()
    index.update()
    toolbox = ResearchToolbox(index)
    loop = run_tool_loop(
        client,
        _messages(spec, query, index),
        toolbox.specs,
        toolbox.call,
        max_turns=max_turns or spec.max_turns,
        final_schema=FINAL_SCHEMA,
        review=lambda final, calls, reviews: _review(
            final, calls, reviews, toolbox, query
        ),
    )
    return _answer(spec, query, loop, toolbox)


def _answer(spec: Kind, query: str, loop, toolbox: ResearchToolbox) -> ResearchAnswer:
    """Return the loop's outcome as a ResearchAnswer, judged by the evidence rule."""
    done = searched(loop.calls)
    if loop.exhausted:
        said = (
            f"{NOT_FOUND}: the research budget of {loop.turns} model turns ran "
            f"out after {len(loop.calls)} tool calls, before an answer"
        )
        return ResearchAnswer(
            spec.name, query, "exhausted", said, (), done, loop.turns, loop.usage
        )
    final = loop.final_content or ""
    reason, answer, backed = _judge(final, loop.calls, toolbox, query)
    if reason:
        said = f"{NOT_FOUND}: {reason}"
        return ResearchAnswer(
            spec.name, query, "not_found", said, (), done, loop.turns, loop.usage
        )
    answer = _bounded(answer, spec.answer_chars)
    evidence = backed[:EVIDENCE_SHOWN]
    return ResearchAnswer(
        spec.name, query, "answered", answer, evidence, done, loop.turns, loop.usage
    )


def _messages(spec: Kind, query: str, index: RepoIndex) -> list[dict[str, str]]:
    system = COMMON.format(root=index.root, files=len(index.files()))
    task = spec.task.format(chars=spec.answer_chars)
    return [
        {"role": "system", "content": f"{system}\n{task}"},
        {"role": "user", "content": f"Question: {query}"},
    ]


def _judge(final: str, calls, toolbox: ResearchToolbox, query: str):
    known = "\n".join([query, *toolbox.outputs])
    return judge_reply(
        final,
        calls=calls,
        shown=toolbox.shown,
        relative=toolbox.relative,
        known=known,
    )


def _review(final, calls, reviews, toolbox, query) -> str | None:
    """Send an unusable final reply back once; "not found" after work stands."""
    if reviews:
        return None
    reason, _, _ = _judge(final, calls, toolbox, query)
    if not reason or reason == SAID_NOT_FOUND:
        return None
    return REVIEW.format(reason=reason)


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"
