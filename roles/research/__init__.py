"""Research tools for a project's ScopeAgent and TaskPlanner: ``explain_code``
and ``ask`` (DESIGN §12, the workflow-architecture spec's sub-agent tools).

Each is a sub-agent the calling model invokes as a tool when it decides it
needs to know the code. It runs its own small tool loop over the repository
with read-only tools only (``search_index`` over a lexical SQLite FTS5 index of
the repository's text files, ``grep``, ``glob``, ``read_file``; no shell, no
writes, no network), confined to the repository root as the executor's file
tools are. The index is kept in the data directory, never in the repository,
and updated incrementally (mtime and size) at each call; ``.git``, symlinks,
binary files and files over the read limit are not indexed. ``explain_code``
explains how something works (up to 1,500 characters, 8 turns); ``ask``
answers a factual question (up to 500 characters, 6 turns). Each answer comes
with the files and lines it rests on, and an answer that cites no line the
tools showed, or states a number or path no tool output shows, is returned as
"not found" with the reason, as is one that runs out of turns::

    research = research_tools(repo_root, data_dir, client)
    specs, call_tool = research.specs, research.call_tool
"""

from roles.research.agents import KINDS, ask, explain_code, research
from roles.research.answer import Citation, ResearchAnswer
from roles.research.index import RepoIndex, UpdateStats
from roles.research.tools import RESEARCH_SPECS, ResearchTools, research_tools

__all__ = [
    "KINDS",
    "RESEARCH_SPECS",
    "Citation",
    "RepoIndex",
    "ResearchAnswer",
    "ResearchTools",
    "UpdateStats",
    "ask",
    "explain_code",
    "research",
    "research_tools",
]
