"""The research sub-agents' tools and the evidence rule their answers must pass."""

from __future__ import annotations

import json

import pytest

from roles.research import RepoIndex, research_tools
from roles.research.answer import Citation, citations, judge_reply, parse_reply
from roles.research.toolbox import ResearchToolbox
from roles.toolloop import ToolCallRecord
from roles.tools.errors import ToolError

CONFIG = "".join(f"# line {n}\n" for n in range(1, 30)) + "TIMEOUT_S = 45\n"


@pytest.fixture
def tools(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "settings.py").write_text(CONFIG)
    (root / "app.py").write_text("from settings import TIMEOUT_S\n\nwait(TIMEOUT_S)\n")
    index = RepoIndex(root, tmp_path / "data")
    index.update()
    return ResearchToolbox(index)


def judge(tools, reply, calls=None):
    calls = calls if calls is not None else [ToolCallRecord("grep", {}, "x")]
    known = "\n".join(["what is the timeout?", *tools.outputs])
    return judge_reply(
        reply, calls=calls, shown=tools.shown, relative=tools.relative, known=known
    )


def answer(text, *sources):
    return json.dumps({"answer": text, "sources": list(sources)})


def test_read_file_numbers_lines_and_remembers_what_it_showed(tools):
    output = tools.call("read_file", {"path": "settings.py", "start_line": 29})
    assert output == (
        "settings.py lines 29-30 of 30:\n   29| # line 29\n   30| TIMEOUT_S = 45"
    )
    assert tools.shown == {"settings.py": {29, 30}}


def test_read_file_says_where_to_go_on_and_refuses_bad_lines(tools):
    output = tools.call("read_file", {"path": "settings.py", "end_line": "3"})
    assert output.startswith("settings.py lines 1-3 of 30; read from line 4 for more")
    assert "past its end" in tools.call(
        "read_file", {"path": "settings.py", "start_line": 99}
    )
    with pytest.raises(ToolError, match="start_line must be a whole number"):
        tools.call("read_file", {"path": "settings.py", "start_line": "two"})
    with pytest.raises(ToolError, match="no such file"):
        tools.call("read_file", {"path": "nope.py"})


def test_search_and_grep_show_path_line_and_text(tools):
    found = tools.call("search_index", {"query": "TIMEOUT_S"})
    assert found.splitlines()[0] == "settings.py:30: TIMEOUT_S = 45   [defines]"
    assert tools.call("grep", {"pattern": r"wait\(", "path": "."}) == (
        "app.py:3: wait(TIMEOUT_S)"
    )
    assert tools.shown == {"settings.py": {30}, "app.py": {1, 3}}


def test_grep_refuses_a_broken_or_explosive_pattern(tools):
    with pytest.raises(ToolError, match="invalid regular expression"):
        tools.call("grep", {"pattern": "wait("})
    with pytest.raises(ToolError, match="repeated group"):
        tools.call("grep", {"pattern": "(a+)+$"})
    with pytest.raises(ToolError, match="pattern must be a non-empty string"):
        tools.call("grep", {"pattern": ""})
    assert tools.outputs == []


def test_an_answer_citing_lines_the_tools_showed_stands(tools):
    tools.call("read_file", {"path": "settings.py", "start_line": 25})
    reason, text, backed = judge(
        tools, answer("TIMEOUT_S is 45 (settings.py:30).", "settings.py:30")
    )
    assert (reason, text) == ("", "TIMEOUT_S is 45 (settings.py:30).")
    assert backed == (Citation("settings.py", 30, 30),)


def test_an_answer_citing_lines_no_tool_showed_is_not_found(tools):
    tools.call("read_file", {"path": "settings.py", "end_line": 5})
    reason, _, backed = judge(tools, answer("It is 45.", "settings.py:30", "cfg.py:1"))
    assert reason == "the answer cites no file and line the tools showed"
    assert backed == ()


def test_an_answer_stating_a_value_no_tool_showed_is_not_found(tools):
    tools.call("search_index", {"query": "TIMEOUT_S"})
    reason, _, _ = judge(
        tools, answer("TIMEOUT_S is 60 seconds, see conf/base.yaml.", "settings.py:30")
    )
    assert (
        reason == "the answer states '60', 'conf/base.yaml', which no tool output shows"
    )


def test_without_a_successful_tool_call_nothing_stands(tools):
    reply = answer("It is 45.", "settings.py:30")
    assert judge(tools, reply, calls=[])[0] == "no tool was called"
    failed = [ToolCallRecord("read_file", {}, "ERROR: no such file", error=True)]
    assert judge(tools, reply, calls=failed)[0] == "no tool call succeeded"
    said = judge(tools, answer("not found", ""))[0]
    assert said == "the tools did not show the answer"


def test_prose_replies_cite_paths_and_line_ranges(tools):
    text, sources = parse_reply(
        "See settings.py:29-30 (in settings.py) and app.py, e.g. line 3."
    )
    assert sources == []
    assert citations([text], tools.relative) == [
        Citation("settings.py", 29, 30),
        Citation("app.py"),
    ]
    assert citations(["../outside.py:3"], tools.relative) == []


def test_research_tools_refuse_a_bad_budget_or_a_data_directory_in_the_repo(
    tmp_path,
):
    root = tmp_path / "repo"
    root.mkdir()
    for turns in (0, -1, True, "3"):
        with pytest.raises(ValueError, match="max_turns must be a positive integer"):
            research_tools(root, tmp_path / "data", None, max_turns=turns)
    with pytest.raises(ValueError, match="inside the repository"):
        research_tools(root, root / "index", None)
    assert not (tmp_path / "data").exists()
    assert list(root.iterdir()) == []
