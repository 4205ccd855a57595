"""Fitting a prompt into a context window: what is cut and what is kept."""

from roles.budget import CUT_MARK, estimate_tokens, fit, reply_limit, reply_reserve

SYSTEM = {"role": "system", "content": "You are R2. " * 20}


def test_messages_that_fit_are_left_alone():
    messages = [SYSTEM, {"role": "user", "content": "plan this"}]
    assert fit(messages, 4096) == messages


def test_the_longest_later_message_is_cut_in_the_middle_first():
    tool = {"role": "user", "content": "HEAD" + "x" * 30_000 + "TAIL"}
    short = {"role": "user", "content": "keep me"}
    fitted = fit([SYSTEM, tool, short], 4096)
    assert fitted[0] == SYSTEM and fitted[2] == short
    assert fitted[1]["content"].startswith("HEAD")
    assert fitted[1]["content"].endswith("TAIL")
    assert CUT_MARK in fitted[1]["content"]
    assert estimate_tokens(fitted) <= 4096 - reply_reserve(4096)


def test_the_system_prompt_is_cut_only_when_nothing_else_is_left():
    system = {"role": "system", "content": "rules " * 5000}
    fitted = fit([system, {"role": "user", "content": "hi"}], 1024)
    assert CUT_MARK in fitted[0]["content"]
    assert fitted[1]["content"] == "hi"


def test_no_window_means_no_cut():
    messages = [{"role": "user", "content": "x" * 100_000}]
    assert fit(messages, None) == messages


def test_the_reply_reserve_is_a_quarter_up_to_2048():
    assert reply_reserve(4096) == 1024
    assert reply_reserve(2048) == 512
    assert reply_reserve(32768) == 2048


def test_a_tool_call_or_a_verdict_may_not_run_as_long_as_a_plan():
    assert reply_limit(8192, "R2") == 2048
    assert reply_limit(8192, "R3") == 1024
    assert reply_limit(8192, "R4a") == 1024
    assert reply_limit(2048, "R3") == 512
