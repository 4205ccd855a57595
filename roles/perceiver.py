"""R1, the Perceiver: carry the user's request into the system with full fidelity.

``perceive`` returns one of three perceptions:

- ``task``: a TaskSpec (``raw_input`` verbatim, relative time words kept);
- ``question``: one clarifying question, only when no reasonable interpretation
  exists, at most 2 rounds; an empty answer means proceed;
- ``direct``: the conversational fast path's answer (greetings, identity, short
  questions), one call with the user's global memories, no pipeline.

The model answers ``TaskSpec`` JSON or ``{"needs_clarification": true,
"question": "…"}``. Whatever happens, a task perception carries a usable spec:
a model error, an unusable reply or a third request for clarification falls back
to a spec built from the raw input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from pydantic import field_validator, model_validator

from roles.claims.question import Question
from roles.contracts import Constraints, TaskSpec
from roles.llm.client import LLMClient, LLMError, LLMOutputError, Usage
from roles.llm.offline import OfflineModel
from roles.llm.offline_roles import offline_answer, offline_spec
from roles.llm.schemas import Reply, normalise_fields
from roles.perceiver_rules import derive_task_id, is_conversational, task_id_for

__all__ = ["Perception", "SessionEntry", "is_conversational", "perceive"]

MAX_CLARIFICATION_ROUNDS = 2
SESSION_RUNS = 5
SESSION_RESULT_CHARS = 300
UNREACHABLE = "I could not reach the language model, so I cannot answer now ({})."

DIRECT_SYSTEM = (
    "You are Artoo, a helpful assistant. Answer directly and concisely, in the "
    "user's language. Obey the stored memories. Plain text only, no JSON."
)
TASK_SYSTEM = """\
You are R1, the Perceiver of a multi-agent system. Restate the user's request as a \
task specification, faithfully: you are a receiver, not a resolver.

Reply with exactly one JSON object, no markdown, no code fence:
- a clear task: {"task_id": "<short_descriptive_snake_case>", "intent": \
"<one-sentence, action-oriented goal>", "constraints": {"scope": <string or null>, \
"deadline": <string or null>}, "raw_input": "<the input>", "asks": <what it asks>}
- only when no reasonable interpretation exists and the answer would materially \
change the plan: {"needs_clarification": true, "question": "<one focused question>"}

Rules:
- task_id is descriptive ASCII snake_case (e.g. "list_python_files"), never a UUID.
- Keep relative time words verbatim (today, this year, last week, recently, \
昨天, 今年, 最近, 上周); do not resolve them to dates: the planner owns dates.
- Recent session history resolves pronouns ("it", "that") and reactions \
("wrong", "again"); never ask about them. A negative reaction means: restate the \
previous intent with stricter criteria or a different approach.
- An amendment ("shorter", "in Chinese", "as a table", "more detail", "translate \
that") means: redo the previous task with the modifier merged into one intent.
- Clarification answers already given belong in the intent or the constraints.
- Never output success criteria: the planner derives them.
- "asks" says what form the answer takes, never the answer: {"answer": one of \
"count" (how many), "total" (a sum or average), "number" (another number), \
"path", "name", "names" (a list of names), "yes_no", "value" (a setting's or \
key's value), "effect" (the request makes or changes files), "text"; \
"subject": what is asked about; "count_of": for a count, one of "lines", \
"matches" (lines holding a word), "files", "distinct" (distinct values), \
"words", "rows", else ""; "matching": the word counted lines hold, else ""; \
"excluding": what the request says a count leaves out (the header), else ""; \
"field": the column or key asked about, else ""; "paths": the absolute paths \
the request makes or changes; "effect": "write", "create", "rename", "move", \
"delete", "change" or ""}."""
NO_MORE_QUESTIONS = (
    "Do not request clarification: proceed with the best interpretation and reply "
    "with the task specification."
)


@dataclass(frozen=True)
class SessionEntry:
    """One of the user's last runs: what they asked and the result's summary."""

    input: str
    result: str


@dataclass
class Perception:
    """What R1 made of the input: a task, a question or a direct answer."""

    kind: Literal["task", "question", "direct"]
    task_spec: TaskSpec | None = None
    question: str = ""
    answer: str = ""
    usage: Usage | None = None


class PerceiverReply(Reply):
    """The model's reply: a task specification or a clarifying question."""

    needs_clarification: bool = False
    question: str = ""
    task_id: str = ""
    intent: str = ""
    constraints: Constraints = Constraints()
    asks: Question | None = None

    @field_validator("asks", mode="before")
    @classmethod
    def _asks_or_none(cls, value: Any) -> Any:
        # What the request asks is a help to the validators, never a reason to
        # refuse the spec: an unusable one is read from the request instead.
        try:
            return Question.model_validate(value) if value else None
        except ValueError:
            return None

    @field_validator("constraints", mode="before")
    @classmethod
    def _no_constraints(cls, value: Any) -> Any:
        # Null, "" and [] say "no constraints"; a bare string could be either
        # the scope or the deadline, so it is left for validation to refuse.
        if value is None or value == "" or value == []:
            return {}
        return normalise_fields(Constraints, value)

    @model_validator(mode="after")
    def _task_or_question(self) -> PerceiverReply:
        if self.needs_clarification and not self.question.strip():
            raise ValueError("needs_clarification requires a non-empty question")
        if not self.needs_clarification and not self.intent.strip():
            raise ValueError("intent must be a non-empty sentence")
        return self


def perceive(
    raw_input: str,
    *,
    model: LLMClient | OfflineModel,
    session: Sequence[SessionEntry] = (),
    memories: Sequence[str] = (),
    clarifications: Sequence[tuple[str, str]] = (),
    today: date,
) -> Perception:
    """Return the perception of ``raw_input``; raise ValueError on empty input.

    ``session`` holds the user's recent runs, oldest first (the last 5 are
    used); ``clarifications`` are the (question, answer) pairs of this run so far.
    Only LLMCancelled propagates; other model failures fall back to a spec built
    from the raw input.
    """
    if not isinstance(raw_input, str) or not raw_input.strip():
        raise ValueError("raw_input must be non-empty text")
    if isinstance(model, OfflineModel):
        model.pause()
        answer = offline_answer(raw_input)
        if answer is not None:
            return Perception("direct", answer=answer)
        return Perception("task", task_spec=offline_spec(raw_input))
    if not clarifications and is_conversational(raw_input):
        return _answer_directly(raw_input, model, session, memories)
    return _perceive_task(raw_input, model, session, clarifications, today)


def _answer_directly(
    raw_input: str,
    model: LLMClient,
    session: Sequence[SessionEntry],
    memories: Sequence[str],
) -> Perception:
    parts = []
    kept = [" ".join(m.split()) for m in memories if m and m.strip()]
    if kept:
        lines = "".join(f"- {m}\n" for m in kept)
        parts.append("Your stored memories (obey these):\n" + lines.rstrip())
    history = session_text(session)
    if history:
        parts.append("Recent session history:\n" + history)
    parts.append(raw_input)
    messages = [
        {"role": "system", "content": DIRECT_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    try:
        answer, usage = model.complete_text(messages)
    except LLMError as err:
        return Perception("direct", answer=UNREACHABLE.format(err))
    return Perception("direct", answer=answer.strip(), usage=usage)


def _perceive_task(
    raw_input: str,
    model: LLMClient,
    session: Sequence[SessionEntry],
    clarifications: Sequence[tuple[str, str]],
    today: date,
) -> Perception:
    may_ask = len(clarifications) < MAX_CLARIFICATION_ROUNDS and all(
        answer.strip() for _, answer in clarifications
    )
    messages = task_messages(raw_input, session, clarifications, today, may_ask)
    try:
        reply, usage = model.complete_json(messages, PerceiverReply)
    except LLMOutputError as err:
        return _fallback(raw_input, clarifications, err.usage)
    except LLMError:
        return _fallback(raw_input, clarifications, None)
    if reply.needs_clarification:
        if may_ask:
            return Perception("question", question=reply.question.strip(), usage=usage)
        return _fallback(raw_input, clarifications, usage)
    spec = TaskSpec(
        task_id=task_id_for(reply.task_id, reply.intent, raw_input),
        intent=reply.intent.strip(),
        constraints=reply.constraints,
        raw_input=raw_input,
        asks=reply.asks,
    )
    return Perception("task", task_spec=spec, usage=usage)


def task_messages(
    raw_input: str,
    session: Sequence[SessionEntry],
    clarifications: Sequence[tuple[str, str]],
    today: date,
    may_ask: bool,
) -> list[dict[str, str]]:
    """Return the slow path's chat messages."""
    parts = [f"Today's date: {today.isoformat()}"]
    history = session_text(session)
    if history:
        parts.append("Recent session history:\n" + history)
    parts.append("New input: " + json.dumps(raw_input, ensure_ascii=False))
    answered = [
        f"Q: {q.strip()}\nA: {a.strip() or '(no answer: proceed as you see fit)'}"
        for q, a in clarifications
    ]
    if answered:
        parts.append("Clarifications so far:\n" + "\n".join(answered))
    if not may_ask:
        parts.append(NO_MORE_QUESTIONS)
    return [
        {"role": "system", "content": TASK_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def session_text(session: Sequence[SessionEntry]) -> str:
    """Return the last 5 runs as numbered lines, oldest first."""
    recent = list(session)[-SESSION_RUNS:]
    lines = []
    for number, entry in enumerate(recent, start=1):
        result = " ".join(entry.result.split())
        if len(result) > SESSION_RESULT_CHARS:
            result = result[:SESSION_RESULT_CHARS] + "…"
        lines.append(f"{number}. input: {entry.input.strip()}\n   result: {result}")
    return "\n".join(lines)


def fallback_spec(
    raw_input: str, clarifications: Sequence[tuple[str, str]]
) -> TaskSpec:
    """Return the spec built from the raw input (and any clarification answers)."""
    intent = " ".join(raw_input.split())
    answers = [a.strip() for _, a in clarifications if a.strip()]
    if answers:
        intent += " (clarified: " + "; ".join(answers) + ")"
    return TaskSpec(
        task_id=derive_task_id(raw_input), intent=intent, raw_input=raw_input
    )


def _fallback(
    raw_input: str, clarifications: Sequence[tuple[str, str]], usage: Usage | None
) -> Perception:
    spec = fallback_spec(raw_input, clarifications)
    return Perception("task", task_spec=spec, usage=usage)
