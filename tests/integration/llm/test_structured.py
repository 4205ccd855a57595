"""Structured replies through the real client: hazards, JSON mode and repair."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from roles.llm.client import LLMError, LLMOutputError, client_for
from roles.llm.schemas import reply_schema

ASK = [
    {"role": "system", "content": "Reply with JSON."},
    {"role": "user", "content": "Judge the result."},
]


class Verdict(BaseModel):
    verdict: str
    evidence: str = ""


HAZARDS = {
    "think block holding a draft": '<think>draft {"verdict": "retry"}</think>'
    '{"verdict": "matched"}',
    "code fence": '```json\n{"verdict": "matched"}\n```',
    "prose before and after": 'Here you go:\n{"verdict": "matched"}\nHope it helps.',
    "two concatenated objects": '{"verdict": "matched"}{"verdict": "failed"}',
    "braces and escaped quotes in strings": '{"verdict": "matched", '
    '"evidence": "printed \\"{}\\" and }"}',
    "unclosed think at the start": '<think>Maybe {"verdict": "retry"}; no:\n'
    '{"verdict": "matched"}',
    "lone closing think": 'reasoning {"verdict": "x"}</think>\n{"verdict": "matched"}',
}


@pytest.mark.parametrize("content", HAZARDS.values(), ids=HAZARDS.keys())
def test_hazardous_reply_yields_the_intended_object(llm_server, content):
    llm_server.reply("R4a", content)
    with client_for("R4a", llm_server.env(), run_id="r") as llm:
        verdict, usage = llm.complete_json(ASK, Verdict)
    assert verdict.verdict == "matched"
    assert len(llm_server.requests) == 1
    assert usage.calls[0].response == content


def test_a_schema_constrained_reply_is_requested(llm_server):
    llm_server.reply("R4a", '{"verdict": "matched"}')
    with client_for("R4a", llm_server.env()) as llm:
        llm.complete_json(ASK, Verdict)
    asked = llm_server.requests[0].response_format
    assert asked["type"] == "json_schema"
    assert asked["json_schema"]["schema"] == reply_schema(Verdict)


def test_json_mode_can_be_switched_off(llm_server):
    llm_server.reply("R4a", '{"verdict": "matched"}')
    with client_for("R4a", llm_server.env(ARTOO_LLM_JSON_MODE="off")) as llm:
        llm.complete_json(ASK, Verdict)
    assert llm_server.requests[0].response_format is None


def test_plain_text_requests_do_not_ask_for_json_mode(llm_server):
    llm_server.reply("R5", "Prefer rg over grep -r.")
    with client_for("R5", llm_server.env()) as llm:
        llm.complete_text(ASK)
    assert llm_server.requests[0].response_format is None


def test_endpoint_rejecting_json_schema_gets_json_mode_and_it_is_remembered(
    llm_server,
):
    llm_server.fault("R4a", status=400, message="json_schema is not supported")
    llm_server.default_reply('{"verdict": "matched"}', role="R4a")
    # A model name of its own keeps the process-wide memory out of other tests.
    env = llm_server.env(OPENAI_MODEL="model-without-json-schema")
    with client_for("R4a", env) as llm:
        verdict, usage = llm.complete_json(ASK, Verdict)
    with client_for("R4a", env) as llm:
        llm.complete_json(ASK, Verdict)
    kinds = [(r.response_format or {}).get("type") for r in llm_server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert verdict.verdict == "matched"
    assert usage.calls[0].attempts == 2
    assert usage.calls[0].mode == "format:json_object"


def test_endpoint_rejecting_response_format_is_asked_again_without_it_and_remembered(
    llm_server,
):
    for _ in range(2):
        llm_server.fault(
            "R4a", status=400, message="Unsupported parameter: 'response_format'"
        )
    llm_server.default_reply('{"verdict": "matched"}', role="R4a")
    env = llm_server.env(OPENAI_MODEL="model-without-json-mode")
    with client_for("R4a", env) as llm:
        verdict, usage = llm.complete_json(ASK, Verdict)
    with client_for("R4a", env) as llm:
        llm.complete_json(ASK, Verdict)
    kinds = [(r.response_format or {}).get("type") for r in llm_server.requests]
    assert kinds == ["json_schema", "json_object", None, None]
    assert verdict.verdict == "matched"
    assert usage.calls[0].attempts == 3


def test_other_400s_are_not_mistaken_for_a_json_mode_rejection(llm_server):
    llm_server.fault("R4a", status=400, message="context length exceeded")
    with client_for("R4a", llm_server.env()) as llm:
        with pytest.raises(LLMError, match="HTTP 400: context length exceeded"):
            llm.complete_json(ASK, Verdict)
    assert len(llm_server.requests) == 1


def test_invalid_reply_gets_one_repair_request_quoting_the_error(llm_server):
    llm_server.reply("R4a", '<think>hm</think>{"evidence": "ls shows 3 files"}')
    llm_server.reply("R4a", '{"verdict": "matched", "evidence": "ls shows 3 files"}')
    with client_for("R4a", llm_server.env()) as llm:
        verdict, usage = llm.complete_json(ASK, Verdict)
    assert verdict == Verdict(verdict="matched", evidence="ls shows 3 files")
    repair = llm_server.requests[1].messages
    assert repair[:2] == ASK
    assert repair[2] == {
        "role": "assistant",
        "content": '{"evidence": "ls shows 3 files"}',
    }
    assert repair[3]["role"] == "user"
    assert "- verdict: Field required" in repair[3]["content"]
    assert len(usage.calls) == 2


def test_a_reply_cut_off_by_the_token_limit_is_asked_again_without_its_text(
    llm_server,
):
    looping = '{"verdict": "matched", "evidence": "' + "ls shows 3 files, " * 400
    llm_server.reply("R2", looping, finish_reason="length")
    llm_server.reply("R2", '{"verdict": "matched", "evidence": "ls shows 3 files"}')
    with client_for("R2", llm_server.env()) as llm:
        verdict, usage = llm.complete_json(ASK, Verdict)
    assert verdict.evidence == "ls shows 3 files"
    repair = llm_server.requests[1].messages
    assert repair[:2] == ASK and len(repair) == 3
    assert repair[2]["role"] == "user"
    assert "cut off before its JSON ended" in repair[2]["content"]
    assert "ls shows 3 files, ls" not in str(repair)
    assert len(usage.calls) == 2


def test_reply_without_json_is_repaired_too(llm_server):
    llm_server.reply("R1", "I think the task is clear.")
    llm_server.reply("R1", '{"verdict": "matched"}')
    with client_for("R1", llm_server.env()) as llm:
        verdict, _ = llm.complete_json(ASK, Verdict)
    assert verdict.verdict == "matched"
    assert "contains no JSON object" in llm_server.requests[1].messages[-1]["content"]


def test_a_second_bad_reply_raises_without_leaking_the_raw_text(llm_server):
    llm_server.reply("R4a", '{"verdict": 1}')
    llm_server.reply("R4a", "FAKE TOOL OUTPUT: 3 files")
    with client_for("R4a", llm_server.env()) as llm:
        with pytest.raises(LLMOutputError) as caught:
            llm.complete_json(ASK, Verdict)
    err = caught.value
    assert "not a valid Verdict after one repair request" in str(err)
    assert llm_server.base_url in str(err)
    assert "FAKE TOOL OUTPUT" not in str(err)
    assert err.raw == "FAKE TOOL OUTPUT: 3 files"
    assert len(err.usage.calls) == 2
    assert len(llm_server.requests) == 2


def test_complete_text_drops_reasoning(llm_server):
    llm_server.reply("R5", "<think>long musing</think>\nUse rg for code search.")
    with client_for("R5", llm_server.env()) as llm:
        text, _ = llm.complete_text(ASK)
    assert text == "Use rg for code search."
