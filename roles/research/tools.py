"""``explain_code`` and ``ask`` as tools of a role's own tool loop.

::

    research = research_tools(repo_root, data_dir, client)
    loop = run_tool_loop(client, messages, [*research.specs, *other_specs],
                         research.call_tool)
    research.usage       # the sub-agents' model calls, to add to the role's
    research.answers     # every ResearchAnswer, for the project's record

A call with a bad query raises ToolError, which the calling loop shows its model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roles.llm.client import LLMClient, ToolSpec, Usage
from roles.research.agents import KINDS, QUERY_CHARS, research
from roles.research.answer import ResearchAnswer
from roles.research.index import RepoIndex
from roles.tools.errors import ToolError


def _spec(name: str, description: str) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": f"The question, at most {QUERY_CHARS} characters.",
                }
            },
            "required": ["query"],
        },
    )


RESEARCH_SPECS: tuple[ToolSpec, ...] = (
    _spec(
        "explain_code",
        "Research the repository and explain how something in its code works: "
        "the key files, classes and functions, what they do and what they connect "
        "to, citing files and lines. Use it before planning work on code you have "
        "not seen; answers 'not found' when the code does not show it.",
    ),
    _spec(
        "ask",
        "Answer a specific factual question about the repository (where X is "
        "defined, which files use Y, what setting Z is), briefly, citing files "
        "and lines; answers 'not found' when the files do not show it.",
    ),
)


class ResearchTools:
    """The research tools of one repository, for one role's tool loop."""

    def __init__(
        self,
        repo_root: Path,
        data_dir: Path,
        client: LLMClient,
        *,
        max_turns: int | None = None,
    ):
        if max_turns is not None and (
            not isinstance(max_turns, int)
            or isinstance(max_turns, bool)
            or max_turns < 1
        ):
            raise ValueError(f"max_turns must be a positive integer, not {max_turns!r}")
        self.index = RepoIndex(repo_root, data_dir)
        self.client = client
        self.max_turns = max_turns
        self.specs = RESEARCH_SPECS
        self.answers: list[ResearchAnswer] = []

    @property
    def usage(self) -> Usage:
        """Return the model calls every research call so far made."""
        total = Usage()
        for answer in self.answers:
            total += answer.usage
        return total

    def call_tool(self, name: str, args: Mapping[str, Any]) -> str:
        """Run ``explain_code`` or ``ask`` and return the answer as tool output."""
        if name not in KINDS:
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(KINDS)}")
        if not isinstance(args, Mapping):
            raise ToolError(f"{name} arguments must be a JSON object")
        answer = research(
            name,
            args.get("query"),
            index=self.index,
            client=self.client,
            max_turns=self.max_turns,
        )
        self.answers.append(answer)
        return answer.as_tool_output()


def research_tools(
    repo_root: Path,
    data_dir: Path,
    client: LLMClient,
    *,
    max_turns: int | None = None,
) -> ResearchTools:
    """Return ``explain_code`` and ``ask`` over ``repo_root`` for ``client``.

    The index is kept in ``data_dir`` (outside the repository) and brought up
    to date at each call. Raises ValueError when the root is not a directory,
    ``data_dir`` lies inside it or ``max_turns`` is not a positive integer.
    """
    return ResearchTools(repo_root, data_dir, client, max_turns=max_turns)
