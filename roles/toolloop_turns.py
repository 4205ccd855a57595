"""One model turn of the tool loop in each protocol, and what it reads in a reply.

A turn sends the conversation, then either returns the final content or queues
the tool calls the reply asked for (``loop.queue``); the loop runs the queue, so
a call that waits on the operator can stop it between two calls and resume
there (``roles.toolloop``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roles.llm.client import ChatReply, ToolSpec
from roles.llm.jsonparse import JSONExtractError, extract_json, split_think, strip_think

if TYPE_CHECKING:
    from roles.toolloop import _Loop

JSON_PROTOCOL_PROMPT = """You can use tools. To call one, reply with only this JSON \
object, nothing before or after it:
{{"action": "tool", "tool": "<tool name>", "args": {{<arguments>}}}}
Call one tool per reply and wait for its result; never invent a result.
When you are done, reply with your final JSON answer (without "action": "tool").

Tools:
{tools}"""

SCHEMA_PROTOCOL_PROMPT = """You can use tools. Every reply is one JSON object:
to call a tool: {{"name": "<tool name>", "arguments": {{<its arguments>}}}}
to finish: {{"name": "final_answer", "arguments": <your final JSON answer>}}
Call one tool per reply and wait for its result; never invent a result.

Tools:
{tools}"""
FINAL = "final_answer"


def text_tool_call(text: str, known: Mapping[str, Any]) -> tuple[str, Any] | None:
    """Return ``(tool, arguments)`` when a reply is a tool call written as text.

    Recognised: ``{"name": t, "arguments": {…}}`` (also ``"parameters"``), the
    OpenAI-shaped ``{"function": {"name": t, "arguments": …}}`` and the JSON
    protocol's ``{"action": "tool", "tool": t, "args": {…}}``, fenced or not,
    for a tool ``t`` of this loop only.
    """
    try:
        value = extract_json(text)
    except JSONExtractError:
        return None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name") or value.get("tool")
    args = value.get("arguments", value.get("parameters", value.get("args")))
    if isinstance(args, str):
        args, _ = parse_arguments(args)
    if name in known and isinstance(args, dict):
        return name, args
    return None


def native_turn(loop: _Loop):
    """Ask with ``tools``; queue the reply's tool calls, or return its text."""
    convo = loop.convo
    reply = loop.client.chat(convo, tools=[] if loop.answer_only else loop.tools)
    caps = loop.client.caps
    if reply.tool_calls:
        caps.native_seen = True
    else:
        text = strip_think(reply.content)
        written = text_tool_call(text, loop.known)
        discovers = loop.client.discovers_tools
        better = "schema" if "json_schema" in caps.formats else "json"
        if discovers and written is not None:
            # The endpoint ignores ``tools``: run the call it wrote, then constrain.
            caps.switch_tools(better, "the endpoint wrote a tool call as text")
            loop.use(better)
            loop.said_later(text, *written)
            return None, reply
        if discovers and loop.expect_tools and not loop.calls and not caps.native_seen:
            # Answered without looking: ask again where a call can be expressed.
            caps.switch_tools(better, "the endpoint answered without calling a tool")
            loop.use(better)
            return None, reply
        return text, reply
    convo.append(
        {
            "role": "assistant",
            "content": reply.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in reply.tool_calls
            ],
        }
    )
    for call in reply.tool_calls:
        args, problem = parse_arguments(call.arguments)
        loop.queue.append(
            {"name": call.name, "args": args, "problem": problem, "id": call.id}
        )
    return None, reply


def schema_turn(loop: _Loop):
    """Ask for one JSON object: a tool call (queued) or the final answer.

    A loop that must act first (``loop.act_first``) offers no final answer
    until it has made a call: the reply can only be a call of one of its tools.
    A loop told to answer now (``loop.answer_only``) offers only the answer.
    """
    final = not (loop.act_first and not loop.calls)
    tools = [] if loop.answer_only else loop.tools
    schema = tool_choice_schema(tools, loop.final_schema, final=final)
    reply: ChatReply = loop.client.chat(loop.convo, schema=schema, mode="tools:schema")
    visible = split_think(reply.content)[0]
    try:
        value = extract_json(reply.content)
    except JSONExtractError:
        return visible, reply
    if isinstance(value, dict) and value.get("name") == FINAL:
        answer = value.get("arguments")
        return json.dumps(answer, ensure_ascii=False), reply
    written = text_tool_call(visible, loop.known)
    if written is None:
        return visible, reply
    loop.said_later(visible, *written)
    return None, reply


def tool_choice_schema(
    tools: Sequence[ToolSpec],
    final_schema: Mapping[str, Any] | None = None,
    *,
    final: bool = True,
) -> dict[str, Any]:
    """Return the schema of one reply: a call of one tool, or (``final``) the
    final answer."""
    branches = [_branch(t.name, dict(t.parameters)) for t in tools if t.name != FINAL]
    if final or not branches:
        branches.append(_branch(FINAL, dict(final_schema or {"type": "object"})))
    return {"anyOf": branches}


def _branch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": arguments},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def json_turn(loop: _Loop):
    """Ask in JSON mode; queue a call written as JSON text, or return the text."""
    convo = loop.convo
    reply: ChatReply = loop.client.chat(convo, json_mode=True, mode="tools:json")
    visible = split_think(reply.content)[0]
    try:
        value = extract_json(reply.content)
    except JSONExtractError as err:
        if '"action"' not in visible:
            return visible, reply
        convo.append({"role": "assistant", "content": visible})
        convo.append(
            {"role": "user", "content": f"Your tool call could not be parsed: {err}"}
        )
        return None, reply
    if not (isinstance(value, dict) and value.get("action") == "tool"):
        written = text_tool_call(visible, loop.known)
        if written is None:
            return visible, reply
        loop.said_later(visible, *written)
        return None, reply
    name = str(value.get("tool") or "")
    args = value.get("args")
    if args is None:
        # Flat calls ({"action": "tool", "tool": "shell", "command": "ls"}) as
        # the original artoo protocol wrote them.
        args = {k: v for k, v in value.items() if k not in ("action", "tool")}
    problem = None if isinstance(args, dict) else "args must be a JSON object"
    loop.said_later(visible, name, args, problem)
    return None, reply


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Return a call's arguments parsed from JSON text, or ``{}`` and the problem."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return {}, f"arguments are not valid JSON ({err})"
    if not isinstance(value, dict):
        return {}, "arguments must be a JSON object"
    return value, None


def with_protocol_prompt(
    convo: list[dict[str, Any]],
    tools: Sequence[ToolSpec],
    template: str | None = None,
) -> list[dict[str, Any]]:
    """Return the conversation with the text protocol's prompt after its system."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n"
        f"  args (JSON schema): {json.dumps(dict(t.parameters))}"
        for t in tools
    )
    text = (template or JSON_PROTOCOL_PROMPT).format(tools=listing)
    prompt = {"role": "system", "content": text}
    leading = 0
    while leading < len(convo) and convo[leading].get("role") == "system":
        leading += 1
    return [*convo[:leading], prompt, *convo[leading:]]


TURNS = {"native": native_turn, "schema": schema_turn, "json": json_turn}
