"""Configuration from the environment: tiers, fallbacks and clear errors."""

from __future__ import annotations

import pytest

from roles.llm.client import LLMConfigError, client_for, is_configured
from roles.llm.config import (
    PriceTable,
    load_endpoint,
    load_settings,
    normalise_base_url,
)
from tests.llm_server import ScriptedLLMServer

FULL = {
    "OPENAI_BASE_URL": "http://llm.local/v1",
    "OPENAI_API_KEY": "sk-shared",
    "OPENAI_MODEL": "shared-model",
}


def test_tier_keys_fall_back_one_by_one_to_openai_keys():
    env = {**FULL, "BRAIN_MODEL": "big-model", "TOOL_BASE_URL": "http://tool.local/v1"}
    brain, tool = load_endpoint("brain", env), load_endpoint("tool", env)
    assert (brain.base_url, brain.api_key, brain.model) == (
        "http://llm.local/v1",
        "sk-shared",
        "big-model",
    )
    assert (tool.base_url, tool.api_key, tool.model) == (
        "http://tool.local/v1",
        "sk-shared",
        "shared-model",
    )


def test_roles_reach_their_tier_endpoint_over_http():
    with ScriptedLLMServer() as shared, ScriptedLLMServer() as brain:
        shared.default_reply("tool tier")
        brain.default_reply("brain tier")
        env = shared.env(BRAIN_BASE_URL=brain.base_url, BRAIN_MODEL="big-model")
        answers = {}
        for role in ("R1", "R2", "R4b", "R3", "R4a", "R5"):
            with client_for(role, env, run_id="run-1") as llm:
                answers[role] = llm.complete_text([{"role": "user", "content": "hi"}])[
                    0
                ]
        assert {r.role for r in brain.requests} == {"R1", "R2", "R4b"}
        assert {r.model for r in brain.requests} == {"big-model"}
        assert {r.role for r in shared.requests} == {"R3", "R4a", "R5"}
        assert {r.model for r in shared.requests} == {"scripted-model"}
        assert answers["R2"] == "brain tier" and answers["R3"] == "tool tier"


def test_base_url_with_pasted_chat_completions_is_normalised(llm_server):
    llm_server.reply("R1", "ok")
    env = llm_server.env(OPENAI_BASE_URL=llm_server.base_url + "/chat/completions/")
    with client_for("R1", env, run_id="r") as llm:
        assert llm.complete_text([{"role": "user", "content": "hi"}])[0] == "ok"
    assert llm_server.requests[0].path == "/v1/chat/completions"
    assert normalise_base_url(" https://api.x.com/v1/chat/completions ") == (
        "https://api.x.com/v1"
    )


def test_missing_keys_raise_an_error_naming_the_variables():
    with pytest.raises(LLMConfigError) as caught:
        client_for("R2", {"OPENAI_BASE_URL": "http://llm.local/v1"})
    message = str(caught.value)
    assert "'brain'" in message and "R2" in message
    assert "BRAIN_API_KEY or OPENAI_API_KEY" in message
    assert "BRAIN_MODEL or OPENAI_MODEL" in message
    assert "BASE_URL" not in message


def test_nothing_configured_means_offline():
    assert is_configured({}) is False
    assert is_configured({"OPENAI_MODEL": "  ", "PATH": "/bin"}) is False


def test_complete_configuration_is_configured():
    assert is_configured(FULL) is True


def test_partial_configuration_is_an_error_not_offline():
    with pytest.raises(LLMConfigError, match="TOOL_MODEL or OPENAI_MODEL"):
        is_configured(
            {
                **{k: v for k, v in FULL.items() if k != "OPENAI_MODEL"},
                "BRAIN_MODEL": "big",
            }
        )


def test_base_url_without_scheme_is_rejected():
    with pytest.raises(LLMConfigError, match="http:// or https://"):
        load_endpoint("tool", {**FULL, "OPENAI_BASE_URL": "llm.local/v1"})


def test_unknown_role_is_rejected():
    with pytest.raises(LLMConfigError, match="unknown role 'R9'"):
        client_for("R9", FULL)


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("ARTOO_LLM_TIMEOUT_S", "soon", "ARTOO_LLM_TIMEOUT_S must be a number"),
        ("ARTOO_LLM_TIMEOUT_S", "0", "ARTOO_LLM_TIMEOUT_S must be at least"),
        ("ARTOO_LLM_RETRIES", "2.5", "ARTOO_LLM_RETRIES must be an integer"),
        ("ARTOO_LLM_RETRIES", "-1", "ARTOO_LLM_RETRIES must be at least 0"),
        ("ARTOO_LLM_JSON_MODE", "maybe", "ARTOO_LLM_JSON_MODE must be on or off"),
        ("ARTOO_TOOL_PROTOCOL", "xml", "ARTOO_TOOL_PROTOCOL must be"),
        ("ARTOO_PRICES", "{not json", "ARTOO_PRICES is not valid JSON"),
        ("ARTOO_PRICES", "[1]", "must be a JSON object keyed by model"),
        ("ARTOO_PRICES", '{"m": {"input": 1}}', "ARTOO_PRICES['m'] must be"),
        ("ARTOO_PRICES", '{"m": {"input": -1, "output": 2}}', "non-negative"),
        ("ARTOO_PRICES", '{"m": {"input": "1", "output": 2}}', "non-negative"),
        ("ARTOO_LLM_TEMPERATURE", "hot", "ARTOO_LLM_TEMPERATURE must be a number"),
        ("ARTOO_LLM_TEMPERATURE", "-0.1", "ARTOO_LLM_TEMPERATURE must be at least"),
        ("ARTOO_LLM_TEMPERATURE", "2.5", "ARTOO_LLM_TEMPERATURE must be at most"),
        ("ARTOO_LLM_SEED", "1.5", "ARTOO_LLM_SEED must be an integer"),
        ("ARTOO_PLAN_CHAINS", "merge", "ARTOO_PLAN_CHAINS must be one of split, join"),
    ],
)
def test_malformed_settings_raise_a_clear_error(key, value, fragment):
    with pytest.raises(LLMConfigError, match=fragment.replace("[", r"\[")):
        load_settings({key: value})


def test_settings_default_to_documented_values():
    settings = load_settings({})
    assert settings.read_timeout_s == 120.0
    assert settings.connect_timeout_s == 10.0
    assert settings.max_retries == 4
    assert settings.json_mode is True
    assert settings.tool_protocol == "auto"
    assert settings.context_tokens == 0
    assert settings.temperature is None and settings.seed is None
    assert settings.plan_chains == "split"
    assert load_settings({"ARTOO_PLAN_CHAINS": " join "}).plan_chains == "join"


def test_price_table_computes_cost_per_million_tokens():
    table = PriceTable.from_json('{"m": {"input": 2, "output": 8}}')
    assert table.cost("m", 1_000_000, 500_000) == pytest.approx(6.0)
    assert table.cost("other", 10, 10) is None
