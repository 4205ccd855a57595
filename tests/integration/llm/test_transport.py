"""Headers, retries, timeouts, cancellation and usage, over real HTTP."""

from __future__ import annotations

import threading

import pytest

from roles.llm.client import LLMCancelled, LLMError, client_for
from tests.llm_server import Step

HELLO = [{"role": "user", "content": "hello"}]


def make_client(server, sleeps, role="R1", cancelled=None, **env):
    return client_for(
        role,
        server.env(**env),
        run_id="run-42",
        cancelled=cancelled,
        sleep=sleeps.append,
        rand=lambda: 0.0,
    )


def test_every_request_carries_role_and_run_headers(llm_server, sleeps):
    llm_server.default_reply("ok")
    for role in ("R1", "R3"):
        with make_client(llm_server, sleeps, role=role) as llm:
            llm.complete_text(HELLO)
    seen = [
        (r.header("X-Artoo-Role"), r.header("X-Artoo-Run")) for r in llm_server.requests
    ]
    assert seen == [("R1", "run-42"), ("R3", "run-42")]
    assert llm_server.requests[0].header("Authorization") == "Bearer sk-test"


def test_429_then_success_makes_exactly_one_retry_after_retry_after(llm_server, sleeps):
    llm_server.fault("R1", status=429, retry_after=2)
    llm_server.reply("R1", "done")
    with make_client(llm_server, sleeps) as llm:
        text, usage = llm.complete_text(HELLO)
    assert text == "done"
    assert len(llm_server.requests) == 2
    assert sleeps == [2.0]
    assert usage.calls[0].attempts == 2


def test_retry_after_is_capped(llm_server, sleeps):
    llm_server.fault("R1", status=503, retry_after=3600)
    llm_server.reply("R1", "done")
    with make_client(llm_server, sleeps) as llm:
        llm.complete_text(HELLO)
    assert sleeps == [120.0]


def test_five_500s_exhaust_the_budget_with_an_error_naming_endpoint_and_status(
    llm_server, sleeps
):
    llm_server.fault("R1", status=500, times=5)
    llm_server.reply("R1", "too late")
    with make_client(llm_server, sleeps, ARTOO_LLM_RETRIES="4") as llm:
        with pytest.raises(LLMError) as caught:
            llm.complete_text(HELLO)
    err = caught.value
    assert llm_server.base_url in str(err)
    assert "last HTTP status 500" in str(err)
    assert (err.status, err.attempts, err.endpoint) == (500, 5, llm_server.base_url)
    assert len(llm_server.requests) == 5
    assert llm_server.pending("R1") == 1


@pytest.mark.parametrize(
    ("rand", "expected"),
    [(0.0, [0.5, 1.0, 2.0, 4.0]), (1.0, [1.0, 2.0, 4.0, 8.0])],
)
def test_backoff_doubles_with_jitter_between_half_and_full(llm_server, rand, expected):
    llm_server.fault("R1", status=502, times=4)
    llm_server.reply("R1", "ok")
    waits = []
    env = llm_server.env(ARTOO_LLM_BACKOFF_S="1")
    with client_for("R1", env, sleep=waits.append, rand=lambda: rand) as llm:
        assert llm.complete_text(HELLO)[0] == "ok"
    assert waits == expected


def test_client_errors_are_not_retried(llm_server, sleeps):
    llm_server.fault("R1", status=401, message="bad key")
    with make_client(llm_server, sleeps) as llm:
        with pytest.raises(LLMError, match="HTTP 401: bad key") as caught:
            llm.complete_text(HELLO)
    assert caught.value.status == 401
    assert len(llm_server.requests) == 1 and sleeps == []


def test_dropped_connection_is_retried(llm_server, sleeps):
    llm_server.fault("R1", drop=True)
    llm_server.reply("R1", "after drop")
    with make_client(llm_server, sleeps) as llm:
        assert llm.complete_text(HELLO)[0] == "after drop"
    assert len(llm_server.requests) == 2


def test_malformed_response_body_is_retried(llm_server, sleeps):
    llm_server.fault("R1", malformed=True)
    llm_server.reply("R1", "clean")
    with make_client(llm_server, sleeps) as llm:
        assert llm.complete_text(HELLO)[0] == "clean"
    assert len(llm_server.requests) == 2


def test_read_timeout_is_honoured_and_named_in_the_error(llm_server, sleeps):
    llm_server.reply("R1", "too slow", delay_s=30)
    env = {"ARTOO_LLM_TIMEOUT_S": "0.2", "ARTOO_LLM_RETRIES": "0"}
    with make_client(llm_server, sleeps, **env) as llm:
        with pytest.raises(LLMError, match="no HTTP status: no reply within 0.2 s"):
            llm.complete_text(HELLO)
    assert len(llm_server.requests) == 1


def test_a_timeout_is_retried_like_any_transient_failure(llm_server, sleeps):
    llm_server.reply("R1", "too slow", delay_s=30)
    llm_server.reply("R1", "in time")
    with make_client(llm_server, sleeps, ARTOO_LLM_TIMEOUT_S="0.2") as llm:
        assert llm.complete_text(HELLO)[0] == "in time"


def test_unscripted_role_fails_with_the_servers_explanation(llm_server, sleeps):
    with make_client(llm_server, sleeps, role="R4a") as llm:
        with pytest.raises(LLMError, match="nothing scripted for role 'R4a'"):
            llm.complete_text(HELLO)


def test_cancellation_abandons_a_pending_reply(llm_server, sleeps):
    cancel = threading.Event()

    def arrive_then_stall(request):
        cancel.set()
        return Step(content="never seen", delay_s=60)

    llm_server.responder(arrive_then_stall, role="R2")
    with make_client(llm_server, sleeps, role="R2", cancelled=cancel) as llm:
        with pytest.raises(LLMCancelled, match="R2"):
            llm.complete_text(HELLO)
    assert len(llm_server.requests) == 1


def test_cancellation_interrupts_the_backoff_wait(llm_server):
    waits = []

    def sleep_then_cancel(seconds):
        waits.append(seconds)
        cancel.set()

    cancel = threading.Event()
    llm_server.fault("R1", status=429, retry_after=30, times=2)
    llm_server.reply("R1", "never")
    env = llm_server.env()
    with client_for("R1", env, sleep=sleep_then_cancel, cancelled=cancel) as llm:
        with pytest.raises(LLMCancelled):
            llm.complete_text(HELLO)
    assert len(llm_server.requests) == 1
    assert len(waits) == 1 and waits[0] < 30


def test_a_cancelled_run_sends_nothing(llm_server):
    with client_for("R1", llm_server.env(), cancelled=lambda: True) as llm:
        with pytest.raises(LLMCancelled):
            llm.complete_text(HELLO)
    assert llm_server.requests == []


def test_usage_reports_tokens_time_messages_and_response(llm_server, sleeps):
    llm_server.reply("R5", "One rule.", usage=(120, 7))
    with make_client(llm_server, sleeps, role="R5") as llm:
        text, usage = llm.complete_text(HELLO)
    (record,) = usage.calls
    assert (record.role, record.model) == ("R5", "scripted-model")
    assert (record.prompt_tokens, record.completion_tokens) == (120, 7)
    assert record.elapsed_ms >= 0
    assert list(record.messages) == HELLO
    assert record.response == "One rule."
    assert usage.cost_usd is None


def test_cached_prompt_and_first_token_are_read_as_llama_cpp_reports_them(
    llm_server, sleeps
):
    llm_server.reply(
        "R5", "One rule.", usage=(120, 7), cached_tokens=100, generation_ms=2.0
    )
    llm_server.reply("R5", "Two rules.", usage=(120, 7))
    with make_client(llm_server, sleeps, role="R5") as llm:
        (first,) = llm.complete_text(HELLO)[1].calls
        (second,) = llm.complete_text(HELLO)[1].calls
    assert first.cached_tokens == 100
    assert first.first_token_ms == max(0, first.elapsed_ms - 2)
    assert (second.cached_tokens, second.first_token_ms) == (0, None)


def test_price_table_turns_usage_into_cost(llm_server, sleeps):
    llm_server.reply("R1", "a", usage=(1_000, 500))
    llm_server.reply("R1", "b", usage=(3_000, 500))
    prices = '{"scripted-model": {"input": 2.0, "output": 10.0}}'
    with make_client(llm_server, sleeps, ARTOO_PRICES=prices) as llm:
        first = llm.complete_text(HELLO)[1]
        total = first + llm.complete_text(HELLO)[1]
    assert first.cost_usd == pytest.approx(0.007)
    assert (total.prompt_tokens, total.completion_tokens) == (4_000, 1_000)
    assert total.cost_usd == pytest.approx(0.018)
