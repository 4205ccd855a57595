"""R1 against a scripted model over real HTTP: prompts, replies and fallbacks."""

from __future__ import annotations

import json
from datetime import date

import pytest

from roles.llm.client import LLMCancelled, client_for
from roles.perceiver import SessionEntry, perceive
from tests.llm_server import ScriptedLLMServer

TODAY = date(2025, 3, 14)


@pytest.fixture
def llm_server():
    """Yield a running ScriptedLLMServer, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def r1(llm_server):
    """Yield an R1 client with no retries, so a fault is final at once."""
    env = llm_server.env(ARTOO_LLM_RETRIES="0")
    with client_for("R1", env, run_id="run-1", sleep=lambda _s: None) as client:
        yield client


def spec_reply(**fields):
    body = {
        "task_id": "count_python_files",
        "intent": "Count the Python files in the project this year",
        "constraints": {"scope": "this year", "deadline": None},
        "raw_input": "ignored",
    }
    body.update(fields)
    return json.dumps(body)


def user_prompt(server, index=0):
    return server.requests_for("R1")[index].messages[-1]["content"]


def system_prompt(server, index=0):
    return server.requests_for("R1")[index].messages[0]["content"]


def test_clear_task_becomes_a_spec_with_the_raw_input_verbatim(llm_server, r1):
    llm_server.reply("R1", spec_reply())
    raw = "  how many .py files did I write this year?\n"
    result = perceive(raw, model=r1, today=TODAY)
    assert result.kind == "task"
    assert result.task_spec.task_id == "count_python_files"
    assert result.task_spec.raw_input == raw
    assert result.task_spec.constraints.scope == "this year"
    assert result.usage is not None and len(result.usage.calls) == 1


def test_prompt_carries_date_rules_and_the_input(llm_server, r1):
    llm_server.reply("R1", spec_reply())
    perceive("count python files written this year", model=r1, today=TODAY)
    assert "Today's date: 2025-03-14" in user_prompt(llm_server)
    assert "count python files written this year" in user_prompt(llm_server)
    system = system_prompt(llm_server)
    assert "verbatim" in system and "needs_clarification" in system
    assert "Never output success criteria" in system


def test_session_history_is_in_the_prompt(llm_server, r1):
    llm_server.reply("R1", spec_reply(intent="Summarise README.md in Chinese"))
    session = [SessionEntry("summarise README.md", "A tool that runs agents.")]
    result = perceive("in Chinese", model=r1, session=session, today=TODAY)
    prompt = user_prompt(llm_server)
    assert "Recent session history:" in prompt
    assert "summarise README.md" in prompt and "A tool that runs agents." in prompt
    assert "amendment" in system_prompt(llm_server)
    assert result.task_spec.intent == "Summarise README.md in Chinese"


def test_unusable_task_id_is_sanitised_or_derived(llm_server, r1):
    llm_server.reply("R1", spec_reply(task_id="Count Python-Files!"))
    llm_server.reply("R1", spec_reply(task_id="a1b2c3d4-e5f6-7890-abcd-ef1234567890"))
    llm_server.reply("R1", spec_reply(task_id="统计", intent="统计文件"))
    first = perceive("count python files", model=r1, today=TODAY)
    second = perceive("count python files", model=r1, today=TODAY)
    third = perceive("统计文件", model=r1, today=TODAY)
    assert first.task_spec.task_id == "count_python_files"
    assert second.task_spec.task_id == "count_the_python_files_in_the"
    assert third.task_spec.task_id.startswith("task_")


def test_ambiguous_input_gets_one_question(llm_server, r1):
    llm_server.reply(
        "R1", '{"needs_clarification": true, "question": "Which report do you mean?"}'
    )
    result = perceive("send the report", model=r1, today=TODAY)
    assert result.kind == "question"
    assert result.question == "Which report do you mean?"
    assert result.task_spec is None


def test_answers_go_into_the_prompt_and_the_raw_input_stays_original(llm_server, r1):
    llm_server.reply("R1", spec_reply(intent="Email the Q1 sales report to Ann"))
    result = perceive(
        "send the report",
        model=r1,
        clarifications=[("Which report?", "Q1 sales, to Ann")],
        today=TODAY,
    )
    prompt = user_prompt(llm_server)
    assert "Q: Which report?\nA: Q1 sales, to Ann" in prompt
    assert result.task_spec.raw_input == "send the report"
    assert result.task_spec.intent == "Email the Q1 sales report to Ann"


def test_after_two_rounds_a_third_question_falls_back_to_the_raw_input(llm_server, r1):
    llm_server.reply("R1", '{"needs_clarification": true, "question": "And?"}')
    result = perceive(
        "send the report",
        model=r1,
        clarifications=[("Which?", "Q1"), ("To whom?", "Ann")],
        today=TODAY,
    )
    assert "Do not request clarification" in user_prompt(llm_server)
    assert result.kind == "task"
    assert result.task_spec.task_id == "send_the_report"
    assert result.task_spec.intent == "send the report (clarified: Q1; Ann)"
    assert result.task_spec.raw_input == "send the report"


def test_an_empty_answer_means_proceed(llm_server, r1):
    llm_server.reply("R1", '{"needs_clarification": true, "question": "Which?"}')
    result = perceive(
        "send the report", model=r1, clarifications=[("Which?", "  ")], today=TODAY
    )
    assert "Do not request clarification" in user_prompt(llm_server)
    assert result.kind == "task"
    assert result.task_spec.intent == "send the report"


def test_unusable_reply_after_repair_falls_back_to_the_raw_input(llm_server, r1):
    llm_server.reply("R1", "I think you want to list files.")
    llm_server.reply("R1", '{"intent": ""}')
    result = perceive("list my files please", model=r1, today=TODAY)
    assert result.kind == "task"
    assert result.task_spec.intent == "list my files please"
    assert result.task_spec.task_id == "list_my_files_please"
    assert len(result.usage.calls) == 2


def test_model_error_falls_back_to_the_raw_input(llm_server, r1):
    llm_server.fault("R1", status=500)
    result = perceive("list my files please", model=r1, today=TODAY)
    assert result.kind == "task"
    assert result.task_spec.raw_input == "list my files please"
    assert result.usage is None


def test_fast_path_answers_directly_with_memories_and_session(llm_server, r1):
    llm_server.reply("R1", "Hello! I am Artoo.")
    result = perceive(
        "hello there",
        model=r1,
        memories=["The user's name is Ann.", "  "],
        session=[SessionEntry("ls", "a.txt")],
        today=TODAY,
    )
    assert result.kind == "direct"
    assert result.answer == "Hello! I am Artoo."
    prompt = user_prompt(llm_server)
    assert "Your stored memories (obey these):\n- The user's name is Ann." in prompt
    assert "Recent session history:" in prompt
    assert prompt.endswith("hello there")
    assert llm_server.requests_for("R1")[0].response_format is None


def test_fast_path_model_error_gives_a_direct_apology(llm_server, r1):
    llm_server.fault("R1", status=503)
    result = perceive("who are you", model=r1, today=TODAY)
    assert result.kind == "direct"
    assert "could not reach the language model" in result.answer


def test_cancellation_propagates(llm_server):
    llm_server.reply("R1", spec_reply(), delay_s=5)
    with client_for("R1", llm_server.env(), cancelled=lambda: True) as client:
        with pytest.raises(LLMCancelled):
            perceive("list my files", model=client, today=TODAY)
