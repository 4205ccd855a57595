"""The research step of a ScopeAgent or TaskPlanner turn: cap, failures, prompts."""

import sqlite3

import pytest

from roles.llm.client import LLMCancelled, LLMError
from roles.projects import DEFAULT_CONFIG, ProjectConfig
from roles.projects.research import (
    FINDINGS_TITLE,
    CappedResearch,
    with_findings,
    with_research_note,
)
from roles.toolloop import ToolCallRecord
from roles.tools.errors import ToolError

MESSAGES = [
    {"role": "system", "content": "## ROLE\nYou are the ScopeAgent."},
    {"role": "user", "content": "## USER REQUEST\nAdd search"},
]


class Answers:
    """Research calls that answer, or raise what they are given."""

    def __init__(self, outcome="found it"):
        self.outcome = outcome
        self.asked = []

    def __call__(self, name, args):
        self.asked.append((name, args["query"]))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def test_the_default_cap_is_three_research_calls_and_must_be_positive():
    assert DEFAULT_CONFIG.research_calls == 3
    with pytest.raises(ValueError, match="research_calls"):
        ProjectConfig(research_calls=0)


def test_calls_past_the_cap_are_refused_without_running():
    answers = Answers()
    capped = CappedResearch(answers, 2)
    assert capped("ask", {"query": "a"}) == "found it"
    assert capped("explain_code", {"query": "b"}) == "found it"
    with pytest.raises(ToolError, match="research limit reached: 2 calls"):
        capped("ask", {"query": "c"})
    assert answers.asked == [("ask", "a"), ("explain_code", "b")]


@pytest.mark.parametrize(
    "failure",
    [
        LLMError("HTTP 500 from the endpoint", status=500),
        OSError("disk full"),
        sqlite3.OperationalError("database is locked"),
        ValueError("repository root is not a directory"),
    ],
)
def test_a_failing_research_call_becomes_a_tool_error(failure):
    capped = CappedResearch(Answers(failure), 3)
    with pytest.raises(ToolError, match=f"^ask failed: {failure}$"):
        capped("ask", {"query": "where?"})
    assert capped.calls == 1


def test_a_cancelled_research_call_is_not_turned_into_a_result():
    capped = CappedResearch(Answers(LLMCancelled("cancelled")), 3)
    with pytest.raises(LLMCancelled):
        capped("ask", {"query": "where?"})


def test_the_research_note_names_the_tools_and_the_cap_in_the_system_prompt():
    noted = with_research_note(MESSAGES, 3)
    assert noted[0]["content"].startswith(MESSAGES[0]["content"])
    assert "explain_code(query)" in noted[0]["content"]
    assert "at most 3 calls" in noted[0]["content"]
    assert noted[1] == MESSAGES[1]
    assert "RESEARCH" not in MESSAGES[0]["content"]


def test_findings_follow_the_user_message_and_no_research_adds_nothing():
    calls = [
        ToolCallRecord("ask", {"query": "where?"}, "in a.py\n\nEvidence: a.py:1"),
        ToolCallRecord("explain_code", {"query": "how?"}, "ERROR: failed", True),
    ]
    found = with_findings(MESSAGES, calls)
    assert found[0] == MESSAGES[0]
    assert found[1]["content"] == (
        f"{MESSAGES[1]['content']}\n\n{FINDINGS_TITLE}\n"
        "### ask: where?\nin a.py\n\nEvidence: a.py:1\n\n"
        "### explain_code: how?\nERROR: failed"
    )
    assert with_findings(MESSAGES, []) == MESSAGES
    assert MESSAGES[1]["content"] == "## USER REQUEST\nAdd search"
