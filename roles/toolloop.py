"""The model ↔ tools loop used by the executor (R3).

Two protocols, one loop: native function calling (``tools`` in the request,
``tool_calls`` in the reply) by default, or, with ``ARTOO_TOOL_PROTOCOL=json``
for endpoints without function calling, JSON in the text::

    {"action": "tool", "tool": "shell", "args": {"command": "ls"}}

Any other reply ends the loop as the final content. A bad tool call (invalid
argument JSON, an unknown tool, a ``ToolError`` from the tool) goes back to the
model as a tool error and never crashes the loop.
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
) -> ToolLoopResult:
    """Alternate model turns and tool calls until a final answer or ``max_turns``.

    ``protocol`` is ``native`` or ``json``; by default the client's setting.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    protocol = protocol or client.tool_protocol
    if protocol not in ("native", "json"):
        raise ValueError(f"protocol must be 'native' or 'json', got {protocol!r}")
    turn = _native_turn if protocol == "native" else _json_turn
    convo = [dict(m) for m in messages]
    if protocol == "json":
        convo = _with_protocol_prompt(convo, tools)
    known = {t.name: t for t in tools}
    calls: list[ToolCallRecord] = []
    usage = Usage()
    for number in range(1, max_turns + 1):
        client.check_cancelled()
        final, reply = turn(client, convo, tools, known, call_tool, calls)
        usage += reply.usage
        if final is not None:
            return ToolLoopResult(final, tuple(calls), number, usage)
    return ToolLoopResult(None, tuple(calls), max_turns, usage, exhausted=True)


def _native_turn(client, convo, tools, known, call_tool, calls):
    reply = client.chat(convo, tools=tools)
    if not reply.tool_calls:
        return strip_think(reply.content), reply
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
        record = _execute(call.name, args, problem, known, call_tool)
        calls.append(record)
        convo.append(
            {"role": "tool", "tool_call_id": call.id, "content": record.output}
        )
    return None, reply


def _json_turn(client, convo, tools, known, call_tool, calls):
    reply: ChatReply = client.chat(convo, json_mode=True)
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
        return visible, reply
    name = str(value.get("tool") or "")
    args = value.get("args")
    if args is None:
        # Flat calls ({"action": "tool", "tool": "shell", "command": "ls"}) as
        # the original artoo protocol wrote them.
        args = {k: v for k, v in value.items() if k not in ("action", "tool")}
    problem = None if isinstance(args, dict) else "args must be a JSON object"
    record = _execute(
        name, args if isinstance(args, dict) else {}, problem, known, call_tool
    )
    calls.append(record)
    convo.append({"role": "assistant", "content": visible})
    # The original artoo wording: "Tool x result:\n…" or "Tool x ERROR: …".
    said = record.output if record.error else f"result:\n{record.output}"
    convo.append({"role": "user", "content": f"Tool {name} {said}"})
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
    convo: list[dict[str, Any]], tools: Sequence[ToolSpec]
) -> list[dict[str, Any]]:
    listing = "\n".join(
        f"- {t.name}: {t.description}\n"
        f"  args (JSON schema): {json.dumps(dict(t.parameters))}"
        for t in tools
    )
    prompt = {"role": "system", "content": JSON_PROTOCOL_PROMPT.format(tools=listing)}
    leading = 0
    while leading < len(convo) and convo[leading].get("role") == "system":
        leading += 1
    return [*convo[:leading], prompt, *convo[leading:]]
