"""explain_code and ask against the scripted model: a role's tool loop calls them."""

from __future__ import annotations

import json

import pytest

from roles.llm.client import client_for
from roles.research import RepoIndex, ask, research_tools
from roles.toolloop import run_tool_loop
from tests.llm_server import ScriptedLLMServer

SKU = "def normalize_sku(raw):\n    return raw.strip().upper()\n"
ORDERS = (
    "from shop.sku import normalize_sku\n\n"
    "def place(order):\n"
    "    return normalize_sku(order.sku)\n"
)
PLAN = [{"role": "user", "content": "Plan: make SKUs lower-case."}]


@pytest.fixture
def llm_server():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "sku.py").write_text(SKU)
    (root / "shop" / "orders.py").write_text(ORDERS)
    return root


def client(server, role, **env):
    env = server.env(ARTOO_LLM_RETRIES="0", **env)
    return client_for(role, env, sleep=lambda s: None)


def plan_with_research(server, repo, tmp_path, **kwargs):
    """Run a planner's tool loop (R2) whose research sub-agents answer as R3."""
    with client(server, "R3") as sub, client(server, "R2") as planner:
        research = research_tools(repo, tmp_path / "data", sub, **kwargs)
        loop = run_tool_loop(
            planner,
            PLAN,
            research.specs,
            research.call_tool,
            max_turns=3,
        )
    return loop, research


def final(answer, *sources):
    return json.dumps({"answer": answer, "sources": list(sources)})


def test_explain_code_searches_reads_and_answers_with_the_lines_it_read(
    llm_server, repo, tmp_path
):
    llm_server.reply(
        "R2", tool_calls=[("explain_code", {"query": "how are SKUs normalised?"})]
    )
    llm_server.reply("R3", tool_calls=[("search_index", {"query": "normalize_sku"})])
    llm_server.reply("R3", tool_calls=[("read_file", {"path": "shop/sku.py"})])
    said = "normalize_sku strips and upper-cases a SKU; place() calls it."
    llm_server.reply("R3", final(said, "shop/sku.py:1-2", "shop/orders.py:4"))
    llm_server.reply("R2", "plan: change upper() to lower() in shop/sku.py")

    loop, research = plan_with_research(llm_server, repo, tmp_path)

    assert loop.final_content == "plan: change upper() to lower() in shop/sku.py"
    assert loop.calls[0].output == (
        f"{said}\n\nEvidence (lines the tools showed):\n"
        "- shop/sku.py:1-2\n- shop/orders.py:4"
    )
    sub = llm_server.requests_for("R3")
    assert [t["function"]["name"] for t in sub[0].tools] == [
        "search_index",
        "grep",
        "glob",
        "read_file",
    ]
    assert sub[1].messages[-1]["content"].splitlines()[0] == (
        "shop/sku.py:1: def normalize_sku(raw):   [defines]"
    )
    assert "    2|     return raw.strip().upper()" in sub[2].messages[-1]["content"]
    answer = research.answers[0]
    assert (answer.kind, answer.status, answer.turns) == ("explain_code", "answered", 3)
    assert len(research.usage.calls) == 3
    assert not list(repo.rglob("*.sqlite3"))


def test_ask_answered_without_evidence_is_not_found(llm_server, repo, tmp_path):
    llm_server.reply("R2", tool_calls=[("ask", {"query": "where is place defined?"})])
    invented = final("place is defined in shop/checkout.py:12.", "shop/checkout.py:12")
    llm_server.reply("R3", invented)
    llm_server.reply("R3", invented)
    llm_server.reply("R2", "plan: I need to look further")

    loop, research = plan_with_research(llm_server, repo, tmp_path)

    assert loop.calls[0].output == ("not found: no tool was called\nSearched: nothing")
    review = llm_server.requests_for("R3")[1].messages[-1]
    assert review["role"] == "user"
    assert review["content"].startswith(
        "Your answer cannot be used: no tool was called."
    )
    assert research.answers[0].status == "not_found"
    assert research.answers[0].evidence == ()


def test_an_answer_stating_what_no_tool_showed_is_not_found(llm_server, repo, tmp_path):
    llm_server.reply("R2", tool_calls=[("ask", {"query": "what does place return?"})])
    llm_server.reply("R3", tool_calls=[("grep", {"pattern": "def place"})])
    wrong = final("place returns 42 via shop/orders.py:3.", "shop/orders.py:3")
    llm_server.reply("R3", wrong)
    llm_server.reply("R3", wrong)
    llm_server.reply("R2", "plan: ask again")

    loop, research = plan_with_research(llm_server, repo, tmp_path)

    assert loop.calls[0].output == (
        "not found: the answer states '42', which no tool output shows\n"
        'Searched: grep {"pattern": "def place"}'
    )
    assert research.answers[0].searched == ('grep {"pattern": "def place"}',)


def test_running_out_of_turns_is_a_clear_not_found(llm_server, repo, tmp_path):
    llm_server.reply("R2", tool_calls=[("ask", {"query": "which files use sku?"})])
    llm_server.reply("R3", tool_calls=[("search_index", {"query": "sku"})])
    llm_server.reply("R3", tool_calls=[("glob", {"pattern": "**/*.py"})])
    llm_server.reply("R2", "plan: without research")

    loop, research = plan_with_research(llm_server, repo, tmp_path, max_turns=2)

    assert loop.calls[0].output == (
        "not found: the research budget of 2 model turns ran out after 2 tool "
        "calls, before an answer\n"
        'Searched: search_index {"query": "sku"}; glob {"pattern": "**/*.py"}'
    )
    assert research.answers[0].status == "exhausted"
    assert len(llm_server.requests_for("R3")) == 2


def test_a_bad_query_is_a_tool_error_and_calls_no_model(llm_server, repo, tmp_path):
    llm_server.reply("R2", tool_calls=[("explain_code", {"query": "  "})])
    llm_server.reply("R2", tool_calls=[("ask", {"query": "x" * 1001})])
    llm_server.reply("R2", "plan: no research")

    loop, research = plan_with_research(llm_server, repo, tmp_path)

    assert [c.output for c in loop.calls] == [
        "ERROR: query must be a non-empty string",
        "ERROR: query must be at most 1000 characters",
    ]
    assert llm_server.requests_for("R3") == []
    assert research.answers == []


def test_ask_works_on_an_endpoint_that_decodes_replies_against_a_schema(
    llm_server, repo, tmp_path
):
    call = {"name": "search_index", "arguments": {"query": "normalize_sku"}}
    llm_server.reply("R3", json.dumps(call))
    said = {"answer": "In shop/sku.py, line 1.", "sources": ["shop/sku.py:1"]}
    llm_server.reply("R3", json.dumps({"name": "final_answer", "arguments": said}))
    index = RepoIndex(repo, tmp_path / "data")

    with client(llm_server, "R3", ARTOO_TOOL_PROTOCOL="schema") as sub:
        answer = ask("where is normalize_sku defined?", index=index, client=sub)

    assert (answer.status, answer.answer) == ("answered", "In shop/sku.py, line 1.")
    assert [str(c) for c in answer.evidence] == ["shop/sku.py:1"]
    schema = llm_server.requests_for("R3")[0].response_format["json_schema"]["schema"]
    names = [b["properties"]["name"]["const"] for b in schema["anyOf"]]
    assert names == ["search_index", "grep", "glob", "read_file", "final_answer"]
