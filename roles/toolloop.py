"""The model ↔ tools loop used by the executor (R3).

Three protocols, one loop:

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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roles.jsonparse import JSONExtractError, extract_json, split_think, strip_think
from roles.llm import ChatReply, LLMClient, ToolSpec, Usage

CallTool = Callable[[str, Mapping[str, Any]], str]

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


class ToolError(Exception):
    """Raised by a tool to report a failure the model should see and handle."""


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
) -> ToolLoopResult:
    """Alternate model turns and tool calls until a final answer or ``max_turns``.

    ``protocol`` is ``native``, ``schema`` or ``json``; by default the client's
    (discovered) one. ``final_schema`` constrains the final answer (schema).
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    protocol = protocol or client.tool_protocol
    if protocol not in TURNS:
        raise ValueError(f"protocol must be one of {', '.join(TURNS)}: {protocol!r}")
    loop = _Loop(client, [dict(m) for m in messages], tools, call_tool, final_schema)
    loop.use(protocol)
    usage = Usage()
    for number in range(1, max_turns + 1):
        client.check_cancelled()
        final, reply = TURNS[loop.protocol](loop)
        usage += reply.usage
        if final is not None:
            return ToolLoopResult(final, tuple(loop.calls), number, usage)
    return ToolLoopResult(None, tuple(loop.calls), max_turns, usage, exhausted=True)


class _Loop:
    """One loop's conversation, tools and calls, and the protocol in use."""

    def __init__(self, client, convo, tools, call_tool, final_schema):
        self.client = client
        self.convo = convo
        self.tools = tools
        self.known = {t.name: t for t in tools}
        self.call_tool = call_tool
        self.final_schema = final_schema
        self.calls: list[ToolCallRecord] = []
        self.protocol = "native"

    def use(self, protocol: str) -> None:
        """Switch to ``protocol``, telling the model how to call tools in it."""
        if protocol != "native" and self.protocol != protocol:
            prompt = SCHEMA_PROTOCOL_PROMPT if protocol == "schema" else None
            self.convo = _with_protocol_prompt(self.convo, self.tools, prompt)
        self.protocol = protocol

    def run(self, name: str, args: Any, problem: str | None = None) -> ToolCallRecord:
        if not isinstance(args, dict):
            args, problem = {}, problem or "arguments must be a JSON object"
        record = _execute(name, args, problem, self.known, self.call_tool)
        self.calls.append(record)
        return record

    def said(self, content: str, name: str, record: ToolCallRecord) -> None:
        """Append a text-protocol call and its result to the conversation."""
        self.convo.append({"role": "assistant", "content": content})
        # The original artoo wording: "Tool x result:\n…" or "Tool x ERROR: …".
        result = record.output if record.error else f"result:\n{record.output}"
        self.convo.append({"role": "user", "content": f"Tool {name} {result}"})


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
        args, _ = _parse_arguments(args)
    if name in known and isinstance(args, dict):
        return name, args
    return None


def _native_turn(loop: _Loop):
    convo = loop.convo
    reply = loop.client.chat(convo, tools=loop.tools)
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
            loop.said(text, written[0], loop.run(*written))
            loop.use(better)
            return None, reply
        if discovers and not loop.calls and not caps.native_seen:
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
        args, problem = _parse_arguments(call.arguments)
        record = loop.run(call.name, args, problem)
        convo.append(
            {"role": "tool", "tool_call_id": call.id, "content": record.output}
        )
    return None, reply


def _schema_turn(loop: _Loop):
    schema = tool_choice_schema(loop.tools, loop.final_schema)
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
    name, args = written
    loop.said(visible, name, loop.run(name, args))
    return None, reply


def tool_choice_schema(
    tools: Sequence[ToolSpec], final_schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return the schema of one reply: a call of one tool, or the final answer."""
    branches = [_branch(t.name, dict(t.parameters)) for t in tools if t.name != FINAL]
    branches.append(_branch(FINAL, dict(final_schema or {"type": "object"})))
    return {"anyOf": branches}


def _branch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": arguments},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _json_turn(loop: _Loop):
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
        loop.said(visible, written[0], loop.run(*written))
        return None, reply
    name = str(value.get("tool") or "")
    args = value.get("args")
    if args is None:
        # Flat calls ({"action": "tool", "tool": "shell", "command": "ls"}) as
        # the original artoo protocol wrote them.
        args = {k: v for k, v in value.items() if k not in ("action", "tool")}
    problem = None if isinstance(args, dict) else "args must be a JSON object"
    loop.said(visible, name, loop.run(name, args, problem))
    return None, reply


def _parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return {}, f"arguments are not valid JSON ({err})"
    if not isinstance(value, dict):
        return {}, "arguments must be a JSON object"
    return value, None


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


def _with_protocol_prompt(
    convo: list[dict[str, Any]],
    tools: Sequence[ToolSpec],
    template: str | None = None,
) -> list[dict[str, Any]]:
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


TURNS = {"native": _native_turn, "schema": _schema_turn, "json": _json_turn}
