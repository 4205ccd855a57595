"""R1's code paths: fast-path detection, task_id sanitising, the offline model."""

from __future__ import annotations

from datetime import date

import pytest

from roles.llm.offline import OfflineModel
from roles.llm.offline_roles import OFFLINE_GREETING
from roles.perceiver import (
    SessionEntry,
    fallback_spec,
    is_conversational,
    perceive,
    session_text,
)
from roles.perceiver_rules import derive_task_id, sanitise_task_id, task_id_for

TODAY = date(2025, 3, 14)


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "Hello!",
        "hey, how are you",
        "thank you so much",
        "good morning",
        "你好",
        "who are you?",
        "Tell me about yourself",
        "你是谁",
        "what is a rune",
        "is the display sharp",
        "why is my playlist empty",
        "how are you",
    ],
)
def test_greetings_identity_and_short_questions_are_conversational(text):
    assert is_conversational(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "list the files in /tmp",
        "how do I run the tests",
        "hi, please find my notes",
        "can you check the disk",
        "帮我查找文件",
        "what files changed in the repository since yesterday and why",
        "ls -la",
        "whoami",
        "a" * 101,
    ],
)
def test_tasks_and_long_inputs_are_not_conversational(text):
    assert not is_conversational(text)


def test_action_verbs_match_whole_words_only():
    assert is_conversational("what is a rune")
    assert not is_conversational("what can you run")
    assert is_conversational("who made the display")
    assert not is_conversational("who can play chess")


def test_sanitising_keeps_ascii_snake_case():
    assert sanitise_task_id("List Python-Files!") == "list_python_files"
    assert sanitise_task_id("Résumé übersicht") == "resume_ubersicht"
    assert sanitise_task_id("列出文件") == ""


def test_sanitising_drops_uuid_like_ids():
    assert sanitise_task_id("a1b2c3d4-e5f6-7890-abcd-ef1234567890") == ""


def test_sanitised_task_id_is_at_most_48_characters():
    long = " ".join(["word"] * 40)
    slug = sanitise_task_id(long)
    assert 0 < len(slug) <= 48
    assert not slug.endswith("_")


def test_cjk_only_input_gets_a_stable_hashed_task_id():
    first = derive_task_id("列出所有文件")
    assert first == derive_task_id("列出所有文件")
    assert first != derive_task_id("删除临时文件")
    assert first.startswith("task_") and len(first) == len("task_") + 8


def test_task_id_comes_from_the_first_line_without_expect_comment():
    text = "echo hello  # expect: hello\nls /tmp"
    assert derive_task_id(text) == "echo_hello"
    assert derive_task_id("& date\n") == "date"


def test_model_task_id_falls_back_to_the_intent_then_the_input():
    assert task_id_for("Count Lines", "x", "y") == "count_lines"
    assert task_id_for("", "Count the lines", "wc") == "count_the_lines"
    assert task_id_for("", "数一数", "数一数").startswith("task_")


def test_offline_greeting_explains_the_offline_model():
    result = perceive("hello", model=OfflineModel(), today=TODAY)
    assert result.kind == "direct"
    assert result.answer == OFFLINE_GREETING
    assert "shell command" in result.answer
    assert "\n" not in result.answer


def test_offline_multi_line_input_starting_with_a_greeting_is_a_task():
    result = perceive("hi there\nls", model=OfflineModel(), today=TODAY)
    assert result.kind == "task"


def test_offline_task_keeps_the_input_as_intent_and_raw_input():
    text = "ls /tmp\n& date  # expect: 20\n"
    result = perceive(text, model=OfflineModel(), today=TODAY)
    assert result.kind == "task"
    assert result.task_spec.task_id == "ls_tmp"
    assert result.task_spec.intent == text.strip()
    assert result.task_spec.raw_input == text
    assert result.usage is None


def test_offline_model_pauses_once_per_perception():
    slept: list[float] = []
    model = OfflineModel(latency_ms=20, sleep=slept.append)
    perceive("echo hi", model=model, today=TODAY)
    assert slept == [0.02]


def test_empty_input_is_a_clear_error():
    with pytest.raises(ValueError, match="raw_input"):
        perceive("  \n", model=OfflineModel(), today=TODAY)


def test_fallback_spec_keeps_the_raw_input_and_adds_the_answers():
    spec = fallback_spec("make a report", [("Which format?", "PDF"), ("For?", "")])
    assert spec.raw_input == "make a report"
    assert spec.intent == "make a report (clarified: PDF)"
    assert spec.task_id == "make_a_report"


def test_session_text_keeps_the_last_five_runs_oldest_first():
    session = [SessionEntry(f"task {i}", f"result {i}") for i in range(7)]
    text = session_text(session)
    assert "task 0" not in text and "task 1" not in text
    assert text.index("task 2") < text.index("task 6")
    assert text.count("input:") == 5
