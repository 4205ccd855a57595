"""R4b against a scripted model over real HTTP: gate, merge, verify, never hang."""

from __future__ import annotations

import json

import pytest

from roles.contracts import (
    DispatchManifest,
    GapPoint,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
    TaskSpec,
)
from roles.llm.client import client_for
from roles.meta_validator import evaluate
from tests.llm_server import ScriptedLLMServer

SPEC = TaskSpec(
    task_id="weather_report",
    intent="Report today's weather in Paris",
    raw_input="weather in paris?",
)
CRITERIA = [
    "the report states a temperature in °C",
    {"criterion": "the report names Paris", "mode": "plausible"},
]


@pytest.fixture
def llm_server():
    """Yield a running ScriptedLLMServer, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def r4b(llm_server):
    """Yield an R4b client with no retries, so a fault is final at once."""
    env = llm_server.env(ARTOO_LLM_RETRIES="0")
    with client_for("R4b", env, run_id="run-1", sleep=lambda _s: None) as client:
        yield client


def manifest(ids=("s1", "s2"), criteria=CRITERIA, reason=""):
    return DispatchManifest(
        task_id="weather_report",
        subtask_ids=list(ids),
        task_spec=SPEC,
        task_criteria=list(criteria),
        reason=reason,
    )


def outcome(subtask_id, status="matched", output=None, reason=None, attempts=1):
    return SubTaskOutcome(
        subtask_id=subtask_id,
        parent_task_id="weather_report",
        intent=f"step {subtask_id}",
        status=status,
        output=output,
        failure_reason=reason,
        gap_trajectory=[GapPoint(attempt=i + 1) for i in range(attempts)],
    )


MATCHED = [outcome("s1", output="Paris"), outcome("s2", output="14 °C, cloudy")]


def run(model, outcomes=MATCHED, replans_so_far=0, **kwargs):
    return evaluate(
        kwargs.pop("manifest", manifest()),
        outcomes,
        model=model,
        elapsed_ms=1500,
        replans_so_far=replans_so_far,
        **kwargs,
    )


def verdict(verdict="accept", met=(True, True), **extra):
    body = {
        "verdict": verdict,
        "summary": "Paris is 14 °C and cloudy.",
        "merged_output": "Paris: 14 °C, cloudy",
        "criteria_results": [
            {
                "criterion": "the report states a temperature in °C",
                "met": met[0],
                "evidence": "14 °C",
            },
            {"criterion": "the report names Paris", "met": met[1], "evidence": "Paris"},
        ],  # fmt: skip
        "gap_summary": "",
    }
    body.update(extra)
    return json.dumps(body)


def test_failed_outcome_sends_a_replan_without_calling_the_model(llm_server, r4b):
    outcomes = [
        outcome("s1", output="Paris", attempts=1),
        outcome("s2", status="failed", reason="weather API timed out", attempts=2),
    ]
    result = run(r4b, outcomes)
    assert llm_server.requests_for("R4b") == []
    assert isinstance(result.message, ReplanRequest)
    assert result.message.gap_summary == "weather API timed out"
    assert result.message.failed_subtasks == ["s2"]
    assert result.message.correction_count == 3
    assert result.message.elapsed_ms == 1500
    assert result.message.intent == SPEC.intent
    assert result.usage is None


def test_all_matched_and_verified_is_accepted(llm_server, r4b):
    llm_server.reply("R4b", verdict())
    result = run(r4b)
    assert isinstance(result.message, OutcomeSummary)
    assert result.message.merged_output == "Paris: 14 °C, cloudy"
    assert result.message.summary == "Paris is 14 °C and cloudy."
    assert [o.subtask_id for o in result.message.outcomes] == ["s1", "s2"]
    assert result.usage is not None


def test_prompt_carries_intent_criteria_and_outputs(llm_server, r4b):
    llm_server.reply("R4b", verdict())
    run(r4b)
    request = llm_server.requests_for("R4b")[0]
    user = request.messages[-1]["content"]
    assert "Task intent: Report today's weather in Paris" in user
    assert "the report states a temperature in °C" in user
    assert '"mode": "plausible"' in user
    assert "14 °C, cloudy" in user
    system = request.messages[0]["content"]
    assert "missing or ambiguous it is not met" in system


def test_rejection_carries_task_criteria_verdicts(llm_server, r4b):
    llm_server.reply(
        "R4b",
        verdict("replan", met=(False, True), gap_summary="no temperature unit"),
    )
    result = run(r4b)
    message = result.message
    assert isinstance(message, ReplanRequest)
    assert message.gap_summary == "no temperature unit"
    assert message.failed_subtasks == []
    assert [v.verdict for v in message.task_criteria_verdicts] == ["fail", "pass"]
    assert message.task_criteria_verdicts[1].mode == "plausible"


def test_accept_with_a_missing_criterion_is_a_rejection(llm_server, r4b):
    body = json.loads(verdict())
    body["criteria_results"] = body["criteria_results"][:1]
    llm_server.reply("R4b", json.dumps(body))
    result = run(r4b)
    assert isinstance(result.message, ReplanRequest)
    failing = [v for v in result.message.task_criteria_verdicts if v.verdict == "fail"]
    assert [v.criterion for v in failing] == ["the report names Paris"]
    assert failing[0].evidence == "no verdict given"


def test_paraphrased_criteria_are_matched_by_position(llm_server, r4b):
    body = json.loads(verdict())
    body["criteria_results"][0]["criterion"] = "temperature given in Celsius"
    llm_server.reply("R4b", json.dumps(body))
    assert isinstance(run(r4b).message, OutcomeSummary)


def test_garbage_verdict_is_a_replan_that_counts_in_d(llm_server, r4b):
    llm_server.reply("R4b", "Looks fine to me!")
    llm_server.reply("R4b", '{"verdict": "maybe"}')
    result = run(r4b)
    message = result.message
    assert isinstance(message, ReplanRequest)
    assert "could not verify" in message.gap_summary
    assert [v.verdict for v in message.task_criteria_verdicts] == ["fail", "fail"]
    assert len(result.usage.calls) == 2


def test_model_error_is_a_replan_even_without_task_criteria(llm_server, r4b):
    llm_server.fault("R4b", status=500)
    result = run(r4b, manifest=manifest(criteria=[]))
    message = result.message
    assert isinstance(message, ReplanRequest)
    assert len(message.task_criteria_verdicts) == 1
    assert message.task_criteria_verdicts[0].verdict == "fail"
    assert message.task_criteria_verdicts[0].failure_class == "environmental"


def test_third_replan_request_recommends_abandon(llm_server, r4b):
    llm_server.default_reply(verdict("replan", met=(False, False)), role="R4b")
    assert run(r4b, replans_so_far=0).message.recommendation == "replan"
    assert run(r4b, replans_so_far=1).message.recommendation == "replan"
    assert run(r4b, replans_so_far=2).message.recommendation == "abandon"


def test_empty_manifest_abandons_with_its_reason(llm_server, r4b):
    empty = manifest(ids=(), reason="R2 planning failed: model unreachable")
    result = run(r4b, [], manifest=empty)
    assert llm_server.requests_for("R4b") == []
    assert result.message.recommendation == "abandon"
    assert result.message.gap_summary == "R2 planning failed: model unreachable"


def test_accept_without_merged_output_joins_the_outputs(llm_server, r4b):
    llm_server.reply("R4b", verdict(merged_output=None))
    result = run(r4b)
    assert result.message.merged_output == "Paris\n14 °C, cloudy"
