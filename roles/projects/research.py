"""The ScopeAgent's and TaskPlanner's research before their JSON reply.

With a real model, the agent's turn is a short tool loop (``roles.toolloop``)
over ``explain_code`` and ``ask`` (``roles.research``): the model calls them
when it decides it needs to know the code, each answer goes back into the
conversation, and its final reply is the agent's JSON. At most
``ProjectConfig.research_calls`` calls run in a turn; a call past the cap, and
a research call that fails (its model, its index), come back to the model as a
tool error, never as a crash. When the model is still calling tools after the
cap, or its final reply is not the JSON, the reply is asked for once more as
today (``complete_json``), with the answers found in the prompt::

    reply, usage = reply_with_research(model, messages, Scope, research, 3)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from roles.llm.client import LLMClient, LLMError, Usage
from roles.llm.jsonparse import JSONExtractError, parse_as
from roles.llm.schemas import reply_schema
from roles.research import ResearchTools
from roles.toolloop import ToolCallRecord, run_tool_loop
from roles.tools.errors import ToolError

ModelT = TypeVar("ModelT", bound=BaseModel)
Messages = list[dict[str, Any]]

RESEARCH_NOTE = """

## RESEARCH
Before your JSON reply you may call the tools explain_code(query) (how some
code works) and ask(query) (one factual question: where something is defined,
which files use it), at most {cap} calls in all. Call them only when the file
list does not tell you enough to decide; each answer cites the lines it rests
on. Then reply with the JSON only."""
FINDINGS_TITLE = "## RESEARCH FINDINGS"
OVER_CAP = (
    "research limit reached: {cap} calls were made in this turn. Give your "
    "JSON reply now with what you know."
)


class CappedResearch:
    """A research ``call_tool`` that runs at most ``cap`` calls and never crashes.

    Past the cap, and when a call's model or index fails, it raises ToolError,
    which the tool loop hands to the model as the call's result.
    """

    def __init__(self, call_tool: Callable[[str, Mapping[str, Any]], str], cap: int):
        self.call_tool = call_tool
        self.cap = cap
        self.calls = 0

    def __call__(self, name: str, args: Mapping[str, Any]) -> str:
        """Run one research call, or refuse it past the cap."""
        if self.calls >= self.cap:
            raise ToolError(OVER_CAP.format(cap=self.cap))
        self.calls += 1
        try:
            return self.call_tool(name, args)
        except (LLMError, OSError, sqlite3.Error, ValueError) as err:
            raise ToolError(f"{name} failed: {err}") from None


def with_research_note(messages: Sequence[Mapping[str, Any]], cap: int) -> Messages:
    """Return the messages with the research tools named in the system prompt."""
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = out[0]["content"] + RESEARCH_NOTE.format(cap=cap)
    return out


def findings(calls: Sequence[ToolCallRecord]) -> str:
    """Return the research calls and their answers as a prompt section."""
    return "\n\n".join(
        f"### {c.name}: {c.args.get('query', '')}\n{c.output}" for c in calls
    )


def with_findings(
    messages: Sequence[Mapping[str, Any]], calls: Sequence[ToolCallRecord]
) -> Messages:
    """Return the messages with the answers found added to the last one."""
    out = [dict(m) for m in messages]
    if calls:
        out[-1]["content"] = (
            f"{out[-1]['content']}\n\n{FINDINGS_TITLE}\n{findings(calls)}"
        )
    return out


def reply_with_research(
    model: LLMClient,
    messages: Sequence[Mapping[str, Any]],
    reply_cls: type[ModelT],
    research: ResearchTools,
    cap: int,
) -> tuple[ModelT, Usage]:
    """Return the agent's reply after the research it asked for, and all usage.

    The usage holds the agent's model calls and its research sub-agents'.
    """
    capped = CappedResearch(research.call_tool, cap)
    loop = run_tool_loop(
        model,
        with_research_note(messages, cap),
        research.specs,
        capped,
        max_turns=cap + 1,
        final_schema=reply_schema(reply_cls),
        expect_tools=False,
    )
    usage = loop.usage + research.usage
    if loop.final_content is not None:
        try:
            return parse_as(loop.final_content, reply_cls), usage
        except (JSONExtractError, ValidationError):
            pass
    reply, more = model.complete_json(with_findings(messages, loop.calls), reply_cls)
    return reply, usage + more
