"""The model ↔ tools loop used by the executor (R3).

Three protocols, one loop (the turns are in ``roles.toolloop_turns``):

- ``native``: ``tools`` in the request, ``tool_calls`` in the reply;
- ``schema``: the reply is decoded against a ``json_schema`` whose ``anyOf``
  has one branch per tool, ``{"name": <tool>, "arguments": <its parameters>}``,
  and one ``final_answer`` branch; for endpoints that ignore ``tools``;
- ``json``: the same calls as JSON in free text, for endpoints that honour no
  schema either::

    {"action": "tool", "tool": "shell", "args": {"command": "ls"}}

With ``auto`` (the default) the loop starts native; when the endpoint answers
a tool request with a call written as text, that call is run and the endpoint
switches to ``schema`` (or ``json``) from then on. Any other reply ends the
loop as the final content. A bad tool call (invalid argument JSON, an unknown
tool, a ``ToolError`` from the tool) goes back to the model as a tool error and
never crashes the loop.

The tools raise ToolError and ToolPaused (``roles.tools.errors``); the loop
catches them. A tool whose call waits on the operator raises ToolPaused: the
loop puts its state (plain data) in ``paused.state["loop"]`` and lets it
through; the caller parks it and later passes it back as ``resume``, and the
loop carries on with that call, which the tool now answers.

A tool wrapper that sees no progress (the executor's repeat rule) raises
AnswerNow: its message is that call's result, and from then on the loop runs no
tool and offers the model only its final answer, so the results it already has
are judged instead of thrown away.

With ``shorten_used`` (R3), a long result the model has used is shortened
once to a digest, its head and tail (``roles.toolloop_digest``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from roles.llm.client import LLMClient, ToolSpec, Usage
from roles.toolloop_digest import Earlier, is_worth_shortening
from roles.toolloop_turns import (
    SCHEMA_PROTOCOL_PROMPT,
    TURNS,
    tool_choice_schema,
    with_protocol_prompt,
)
from roles.tools.errors import ToolError, ToolPaused

__all__ = [
    "AnswerNow",
    "ToolCallRecord",
    "ToolLoopResult",
    "run_tool_loop",
    "tool_choice_schema",
]

CallTool = Callable[[str, Mapping[str, Any]], str]
# (final content, calls so far, reviews so far) -> a message that sends the
# model back to work, or None to take the final answer.
Review = Callable[[str, Sequence["ToolCallRecord"], int], str | None]


class AnswerNow(Exception):  # noqa: N818 — an instruction, not an error
    """Raised by a tool wrapper to end the calls: the model must answer now."""


NO_MORE_CALLS = (
    "no more tool calls in this attempt: give your final JSON answer now from "
    "the tool results above"
)


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call: what was asked, what came back, and whether it failed."""

    name: str
    args: Mapping[str, Any]
    output: str
    error: bool = False


@dataclass(frozen=True)
class ToolLoopResult:
    """Outcome of a tool loop.

    ``exhausted`` is True (and ``final_content`` None) when the model was still
    calling tools after ``max_turns`` model turns.
    """

    final_content: str | None
    calls: tuple[ToolCallRecord, ...]
    turns: int
    usage: Usage
    exhausted: bool = False


def run_tool_loop(
    client: LLMClient,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    call_tool: CallTool,
    *,
    max_turns: int = 10,
    protocol: str | None = None,
    final_schema: Mapping[str, Any] | None = None,
    resume: Mapping[str, Any] | None = None,
    review: Review | None = None,
    expect_tools: bool = True,
    act_first: bool = False,
    shorten_used: bool = False,
) -> ToolLoopResult:
    """Alternate model turns and tool calls until a final answer or ``max_turns``.

    ``protocol`` is ``native``, ``schema`` or ``json``; by default the client's
    (discovered) one. ``final_schema`` constrains the final answer (schema).
    ``resume`` is the state a ToolPaused carried out of an earlier call; the
    loop then starts with the call that paused (``messages`` is not used).
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    protocol = protocol or client.tool_protocol
    if protocol not in TURNS:
        raise ValueError(f"protocol must be one of {', '.join(TURNS)}: {protocol!r}")
    loop = _Loop(client, [dict(m) for m in messages], tools, call_tool, final_schema)
    loop.expect_tools = expect_tools
    loop.act_first = act_first
    loop.earlier = Earlier() if shorten_used else None
    loop.use(protocol)
    usage, first = Usage(), 1
    if resume is not None:
        loop.restore(resume)
        first = int(resume["turn"])
        loop.drain(first)
        first += 1
    for number in range(first, max_turns + 1):
        client.check_cancelled()
        if loop.earlier is not None:
            loop.earlier.settle(loop.convo, number)
        final, reply = TURNS[loop.protocol](loop)
        usage += reply.usage
        if final is not None:
            push = None
            # A loop told to answer now cannot act on a review's push.
            if review is not None and number < max_turns and not loop.answer_only:
                push = review(final, tuple(loop.calls), loop.reviews)
            if push is None:
                return ToolLoopResult(final, tuple(loop.calls), number, usage)
            loop.send_back(reply.content, push)
        loop.drain(number)
    return ToolLoopResult(None, tuple(loop.calls), max_turns, usage, exhausted=True)


class _Loop:
    """One loop's conversation, tools, calls and queued calls, and its protocol."""

    def __init__(self, client, convo, tools, call_tool, final_schema):
        self.client = client
        self.convo = convo
        self.tools = tools
        self.known = {t.name: t for t in tools}
        self.call_tool = call_tool
        self.final_schema = final_schema
        self.calls: list[ToolCallRecord] = []
        self.queue: list[dict[str, Any]] = []
        self.protocol = "native"
        self.reviews = 0
        self.expect_tools = True
        self.act_first = False
        self.answer_only = False
        self.earlier: Earlier | None = None

    def use(self, protocol: str) -> None:
        """Switch to ``protocol``, telling the model how to call tools in it."""
        if protocol != "native" and self.protocol != protocol:
            prompt = SCHEMA_PROTOCOL_PROMPT if protocol == "schema" else None
            before = len(self.convo)
            self.convo = with_protocol_prompt(self.convo, self.tools, prompt)
            if self.earlier is not None:
                # The prompt goes in after the system prompts, before any result.
                self.earlier.shift(len(self.convo) - before)
        self.protocol = protocol

    def send_back(self, said: str, message: str) -> None:
        """Answer a final reply with ``message``: the model goes on working."""
        self.reviews += 1
        self.convo.append({"role": "assistant", "content": said})
        self.convo.append({"role": "user", "content": message})

    def said_later(
        self, content: str, name: str, args: Any, problem: str | None = None
    ) -> None:
        """Queue a call the model wrote as text; its result is told as text."""
        self.queue.append(
            {"name": name, "args": args, "problem": problem, "said": content}
        )

    def drain(self, turn: int) -> None:
        """Run the queued calls in order, answering each in the conversation."""
        while self.queue:
            call = self.queue[0]
            try:
                record = self.run(call["name"], call["args"], call.get("problem"))
            except ToolPaused as paused:
                paused.state["loop"] = self.state(turn)
                raise
            self.queue.pop(0)
            self.tell(call, record, turn)

    def tell(self, call: Mapping[str, Any], record: ToolCallRecord, turn: int) -> None:
        """Answer ``call`` with its result, noting a long one to shorten later."""
        lead = ""
        if "said" in call:
            # The original artoo wording: "Tool x result:\n…" or "Tool x ERROR: …".
            lead = f"Tool {call['name']} " + ("" if record.error else "result:\n")
            self.convo.append({"role": "assistant", "content": call["said"]})
            self.convo.append({"role": "user", "content": lead + record.output})
        else:
            self.convo.append(
                {"role": "tool", "tool_call_id": call["id"], "content": record.output}
            )
        if self.earlier is not None and is_worth_shortening(
            record.output, record.error
        ):
            index = len(self.convo) - 1
            self.earlier.note(index, turn, record.name, record.args, lead)

    def run(self, name: str, args: Any, problem: str | None = None) -> ToolCallRecord:
        if not isinstance(args, dict):
            args, problem = {}, problem or "arguments must be a JSON object"
        if self.answer_only:
            record = ToolCallRecord(name, args, f"ERROR: {NO_MORE_CALLS}", error=True)
        else:
            try:
                record = _execute(name, args, problem, self.known, self.call_tool)
            except AnswerNow as stop:
                self.answer_only = True
                record = ToolCallRecord(name, args, f"ERROR: {stop}", error=True)
        self.calls.append(record)
        return record

    def state(self, turn: int) -> dict[str, Any]:
        """Return the loop as plain data, to resume at the first queued call."""
        return {
            "turn": turn,
            "protocol": self.protocol,
            "convo": [dict(m) for m in self.convo],
            "calls": [asdict(c) for c in self.calls],
            "queue": [dict(c) for c in self.queue],
            "reviews": self.reviews,
            "answer_only": self.answer_only,
            "earlier": self.earlier.state() if self.earlier is not None else [],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take the conversation, calls and queue of a paused loop."""
        self.protocol = state["protocol"]
        self.convo = [dict(m) for m in state["convo"]]
        self.calls = [ToolCallRecord(**c) for c in state["calls"]]
        self.queue = [dict(c) for c in state["queue"]]
        self.reviews = int(state.get("reviews", 0))
        self.answer_only = bool(state.get("answer_only", False))
        if self.earlier is not None:
            self.earlier = Earlier(state.get("earlier"))


def _execute(
    name: str,
    args: Mapping[str, Any],
    problem: str | None,
    known: Mapping[str, ToolSpec],
    call_tool: CallTool,
) -> ToolCallRecord:
    if name not in known:
        problem = f"unknown tool {name!r}; available: {', '.join(known) or 'none'}"
    if problem is not None:
        return ToolCallRecord(name, args, f"ERROR: {problem}", error=True)
    try:
        output = call_tool(name, args)
    except ToolError as err:
        return ToolCallRecord(name, args, f"ERROR: {err}", error=True)
    return ToolCallRecord(
        name, args, output if isinstance(output, str) else str(output)
    )
