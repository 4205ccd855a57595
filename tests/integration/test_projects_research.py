"""The ScopeAgent researches the repository before its remit (scripted model).

Each test creates a project on a small repository, delivers its AskScopeAgent
and the ScopeReply through the bus's own ``deliver``, and reads the remit the
Project stored. The research sub-agents reach the same scripted server as the
ScopeAgent (role ``Scope``); a responder tells their requests apart by their
system prompt.
"""

from __future__ import annotations

import json

import pytest

from artoo_web import bus, projects
from artoo_web.handlers import HANDLERS
from artoo_web.models import BusMessage, Project
from roles.projects import DEFAULT_CONFIG
from tests.llm_server import ScriptedLLMServer, Step, ToolCallSpec

pytestmark = pytest.mark.django_db

STORE = "def save_note(text):\n    return text.strip()\n"
QUESTION = "Where are notes saved?"
ANSWER = "save_note strips the note text and returns it."


@pytest.fixture
def repo(settings, tmp_path):
    root = tmp_path / "allowed" / "notes-app"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "store.py").write_text(STORE)
    settings.ARTOO_ALLOWED_PATHS = [tmp_path / "allowed"]
    settings.DATA_DIR = tmp_path / "data"
    return root


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env(ARTOO_LLM_RETRIES="1").items():
            monkeypatch.setenv(name, value)
        yield server


def is_research(request) -> bool:
    return request.messages[0]["content"].startswith("You research the code")


def offers_research(request) -> bool:
    return any(t["function"]["name"] == "ask" for t in request.tools or ())


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def scope_reply(remit: str) -> str:
    milestone = {"description": "User can save notes", "areas": ["notes/store.py"]}
    return json.dumps({"remit": remit, "milestones": [milestone]})


def ask_call(query: str = QUESTION) -> Step:
    return Step(tool_calls=(ToolCallSpec("ask", {"query": query}),))


def scoped(user, repo) -> Project:
    """Create the project and deliver its ScopeAgent's turn and reply."""
    project = projects.create(user, "Make notes searchable", str(repo))
    for type_ in ("AskScopeAgent", "ScopeReply"):
        msg = BusMessage.objects.get(project=project, type=type_)
        assert bus.deliver(msg.id, HANDLERS) == "delivered"
    return Project.objects.get(id=project.id)


def test_the_scope_agent_asks_and_the_answer_reaches_the_remit(user, repo, model):
    def respond(request):
        if is_research(request):
            if not tool_results(request):
                read = ToolCallSpec("read_file", {"path": "notes/store.py"})
                return Step(tool_calls=(read,))
            sources = ["notes/store.py:1-2"]
            return json.dumps({"answer": ANSWER, "sources": sources})
        if not tool_results(request):
            return ask_call()
        found = tool_results(request)[0].split("\n\n")[0]
        return scope_reply(f"Search the notes. Known: {found}")

    model.responder(respond, role="Scope")

    project = scoped(user, repo)

    assert project.load_state().remit == f"Search the notes. Known: {ANSWER}"
    asked = model.requests_for("Scope")
    assert [is_research(r) for r in asked] == [False, True, True, False]
    assert "at most 3 calls" in asked[0].messages[0]["content"]
    assert tool_results(asked[-1]) == [
        f"{ANSWER}\n\nEvidence (lines the tools showed):\n- notes/store.py:1-2"
    ]
    # The sub-agent's two calls count as the ScopeAgent's.
    assert project.usage["scope_agent"]["calls"] == 4
    assert not list(repo.rglob("*.sqlite3"))
    assert list((repo.parents[1] / "data" / "research").glob("research-*.sqlite3"))


def test_a_scope_agent_that_keeps_researching_is_asked_for_its_reply(user, repo, model):
    def respond(request):
        if is_research(request):
            if not tool_results(request):
                return Step(tool_calls=(ToolCallSpec("glob", {"pattern": "*.md"}),))
            return json.dumps({"answer": "not found", "sources": []})
        if offers_research(request):
            return ask_call(f"question {len(request.messages)}")
        return scope_reply("Search the notes.")

    model.responder(respond, role="Scope")

    project = scoped(user, repo)

    assert project.load_state().remit == "Search the notes."
    asked = model.requests_for("Scope")
    cap = DEFAULT_CONFIG.research_calls
    started = [r for r in asked if is_research(r) and not tool_results(r)]
    assert len(started) == cap
    turns = [r for r in asked if offers_research(r)]
    assert len(turns) == cap + 1
    assert len(tool_results(turns[-1])) == cap
    # The call past the cap was refused; the reply is then asked for alone.
    last = asked[-1]
    assert last.tools is None and last.response_format is not None
    findings = last.messages[-1]["content"].split("## RESEARCH FINDINGS\n")[1]
    answers = findings.split("### ask: question")[1:]
    assert len(answers) == cap + 1
    assert "ERROR: research limit reached" in answers[-1]
    assert not any("ERROR" in a for a in answers[:-1])


def test_a_failing_research_call_is_a_tool_result_not_a_crash(user, repo, model):
    def respond(request):
        if is_research(request):
            return Step(status=400, error_message="the request was refused")
        if not tool_results(request):
            return ask_call()
        return scope_reply("Search the notes without research.")

    model.responder(respond, role="Scope")

    project = scoped(user, repo)

    assert project.load_state().remit == "Search the notes without research."
    (said,) = tool_results(model.requests_for("Scope")[-1])
    assert said.startswith("ERROR: ask failed:")
    assert project.status != "failed"


def test_commands_and_paths_the_scope_agent_guessed_are_dropped(user, repo, model):
    milestone = {
        "description": "User can search notes",
        "verify": [
            "sh tests/check.sh",  # the prompt's example, copied
            "python3 -m unittest -q",
            "python3 notes/store.py",
            "sh scripts/searchable.sh",  # named in the request below
        ],
        "protected": ["tests/", "notes", "scripts/searchable.sh"],
    }
    reply = json.dumps({"remit": "Search notes", "milestones": [milestone]})
    model.responder(lambda request: reply, role="Scope")
    project = projects.create(
        user, "Make notes searchable; sh scripts/searchable.sh must pass", str(repo)
    )
    for type_ in ("AskScopeAgent", "ScopeReply"):
        msg = BusMessage.objects.get(project=project, type=type_)
        assert bus.deliver(msg.id, HANDLERS) == "delivered"

    kept = Project.objects.get(id=project.id).load_state().milestones[0]

    assert kept.verify == [
        "python3 -m unittest -q",
        "python3 notes/store.py",
        "sh scripts/searchable.sh",
    ]
    assert kept.protected == ["notes", "scripts/searchable.sh"]
