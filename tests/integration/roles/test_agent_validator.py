"""R4a against the scripted model, and the whole fast loop with R3 and R4a."""

from __future__ import annotations

import json

import pytest

from roles.agent_validator import validate
from roles.claims.evidence import format_evidence
from roles.contracts import Criterion, ExecutionResult, GapPoint, SubTask
from roles.executor import execute
from roles.fastloop import run_fast_loop
from roles.llm.client import client_for
from roles.tools import Toolbox
from tests.llm_server import ScriptedLLMServer

COUNTED = "the line count is reported"
SUBTASK = SubTask(
    subtask_id="sub-7",
    parent_task_id="task-1",
    intent="Count the lines of notes.txt",
    success_criteria=[
        COUNTED,
        Criterion(criterion="exit status 0", check={"type": "exit_code", "value": 0}),
    ],
)


def shell_result(output="3 lines", shell="[exit code 0]\n3", status="completed"):
    return ExecutionResult(
        subtask_id="sub-7",
        status=status,
        output=output,
        tool_calls=[format_evidence("shell", {"command": "wc -l < notes.txt"}, shell)],
    )


def reply(met, *, verdict=None, failure_class=None, evidence="", **extra):
    body = {
        "verdict": verdict or ("matched" if met else "retry"),
        "criteria_results": [
            {
                "criterion": COUNTED,
                "met": met,
                "failure_class": failure_class,
                "evidence": evidence or ("wc printed 3" if met else "no count"),
            }
        ],
        **extra,
    }
    return json.dumps(body)


@pytest.fixture
def llm_server():
    with ScriptedLLMServer() as server:
        yield server


def judge(server, result, tmp_path, attempt=1, trajectory=(), **kwargs):
    env = server.env(ARTOO_LLM_RETRIES="0")
    with client_for("R4a", env, sleep=lambda s: None) as llm:
        return validate(
            kwargs.pop("subtask", SUBTASK),
            result,
            model=llm,
            attempt=attempt,
            trajectory=list(trajectory),
            workspace=tmp_path,
            **kwargs,
        )


def test_machine_checks_run_first_and_the_model_judges_only_the_rest(
    llm_server, tmp_path
):
    llm_server.reply("R4a", reply(True))
    validation = judge(llm_server, shell_result(), tmp_path)
    user = llm_server.requests[0].messages[1]["content"]
    assert f"Criteria to judge (exactly these, in this order):\n1. {COUNTED}" in user
    assert (
        "Already checked in code (do not judge again):\n- exit status 0: pass" in user
    )
    assert '"tool_calls"' in user and "wc -l < notes.txt" in user
    assert validation.verdict == "matched"
    assert validation.outcome.status == "matched"
    assert [v.evidence for v in validation.verdicts] == [
        "wc printed 3",
        "exit code 0 (matches)",
    ]
    assert validation.outcome.tool_calls == shell_result().tool_calls
    assert validation.usage is not None and len(validation.usage.calls) == 1


def test_an_unmet_criterion_on_attempt_one_asks_for_a_correction(llm_server, tmp_path):
    llm_server.reply(
        "R4a",
        reply(
            False,
            failure_class="logical",
            what_was_wrong="the output is prose without the number",
            what_to_do="report only the number from wc -l",
        ),
    )
    validation = judge(llm_server, shell_result(), tmp_path)
    assert validation.verdict == "retry" and validation.outcome is None
    correction = validation.correction
    assert (correction.failed_criterion, correction.failure_class) == (
        COUNTED,
        "logical",
    )
    assert correction.attempt_number == 1
    assert correction.what_to_do == "report only the number from wc -l"
    assert validation.gap == GapPoint(
        attempt=1, score=0.5, unmet_criteria=[COUNTED], failure_class="logical"
    )


def test_environmental_evidence_promotes_a_logical_failure(llm_server, tmp_path):
    llm_server.reply("R4a", reply(False, failure_class="logical"))
    missing = shell_result(
        output="", shell="[exit code 1]\nwc: notes.txt: No such file or directory"
    )
    validation = judge(llm_server, missing, tmp_path)
    assert [v.failure_class for v in validation.verdicts] == [
        "environmental",
        "environmental",
    ]
    assert validation.gap.failure_class == "environmental"


def test_the_last_attempt_fails_with_the_trajectory(llm_server, tmp_path):
    llm_server.reply("R4a", reply(False, what_was_wrong="still prose"))
    first = GapPoint(attempt=1, score=0.5, unmet_criteria=[COUNTED])
    validation = judge(
        llm_server, shell_result(), tmp_path, attempt=2, trajectory=[first]
    )
    outcome = validation.outcome
    assert validation.verdict == "failed" and validation.correction is None
    assert outcome.failure_reason == "max attempts (2) reached; last issue: still prose"
    assert [g.attempt for g in outcome.gap_trajectory] == [1, 2]
    assert outcome.intent == SUBTASK.intent
    assert outcome.success_criteria == SUBTASK.success_criteria


def test_an_executor_failure_fails_without_asking_the_model(llm_server, tmp_path):
    result = shell_result(output="cannot count", status="failed")
    validation = judge(llm_server, result, tmp_path)
    assert llm_server.requests == []
    assert validation.verdict == "failed"
    assert validation.outcome.failure_reason == (
        "the executor reported failure: cannot count"
    )
    assert validation.verdicts[0].verdict == "fail"


def test_an_infrastructure_error_fails_environmental_without_retry(
    llm_server, tmp_path
):
    validation = judge(
        llm_server, shell_result(), tmp_path, infrastructure_error="LLM timed out"
    )
    assert llm_server.requests == []
    assert validation.verdict == "failed"
    assert validation.outcome.failure_reason == "infrastructure error: LLM timed out"
    assert {v.failure_class for v in validation.verdicts} == {"environmental"}


def test_a_failed_verdict_from_the_model_is_not_retried(llm_server, tmp_path):
    llm_server.reply(
        "R4a",
        reply(False, verdict="failed", failure_reason="notes.txt is a directory"),
    )
    validation = judge(llm_server, shell_result(), tmp_path)
    assert validation.verdict == "failed"
    assert validation.outcome.failure_reason == "notes.txt is a directory"


def test_a_criterion_the_model_skipped_fails(llm_server, tmp_path):
    llm_server.reply("R4a", json.dumps({"verdict": "matched", "criteria_results": []}))
    validation = judge(llm_server, shell_result(), tmp_path)
    assert validation.verdict == "retry"
    assert validation.verdicts[0].evidence == "the validator gave no verdict for it"


def test_the_model_cannot_override_a_failed_machine_check(llm_server, tmp_path):
    llm_server.reply("R4a", reply(True))
    validation = judge(llm_server, shell_result(shell="[exit code 1]\n3"), tmp_path)
    assert validation.verdict == "retry"
    assert validation.correction.failed_criterion == "exit status 0"


def test_a_scoring_error_fails_without_retry(llm_server, tmp_path):
    llm_server.reply("R4a", "no json here")
    llm_server.reply("R4a", "still none")
    validation = judge(llm_server, shell_result(), tmp_path)
    assert validation.verdict == "failed"
    assert validation.outcome.failure_reason.startswith("scoring error:")
    assert len(validation.usage.calls) == 2


def test_law1_in_the_evidence_is_environmental_and_final(llm_server, tmp_path):
    llm_server.reply("R4a", reply(False, failure_class="logical"))
    denied = shell_result(
        output="the deletion was denied",
        shell="[LAW1] rm deletes files permanently — denied by the operator",
    )
    validation = judge(llm_server, denied, tmp_path)
    assert validation.verdict == "failed"
    assert validation.outcome.failure_reason.startswith("Law 1: [LAW1] rm deletes")
    assert {v.failure_class for v in validation.verdicts} == {"environmental"}


def test_the_fast_loop_retries_with_the_correction_and_then_matches(
    llm_server, tmp_path
):
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    subtask = SUBTASK
    llm_server.reply("R3", tool_calls=[("shell", {"command": "cat notes.txt"})])
    # An answer with no number for a count is sent back once in the conversation;
    # the same answer again goes to R4a.
    llm_server.reply("R3", '{"status": "completed", "output": "a b c"}')
    llm_server.reply("R3", '{"status": "completed", "output": "a b c"}')
    llm_server.reply(
        "R4a",
        reply(False, what_was_wrong="no count given", what_to_do="use wc -l"),
    )
    llm_server.reply("R3", tool_calls=[("shell", {"command": "wc -l < notes.txt"})])
    llm_server.reply("R3", '{"status": "completed", "output": "3"}')
    llm_server.reply("R4a", reply(True))
    toolbox = Toolbox(tmp_path)
    env = llm_server.env(ARTOO_LLM_RETRIES="0")
    sent, corrections = [], []
    with client_for("R3", env) as r3, client_for("R4a", env) as r4a:
        outcome, executions, validations = run_fast_loop(
            subtask,
            execute_fn=lambda correction, attempt: execute(
                subtask,
                model=r3,
                toolbox=toolbox,
                correction=correction,
                attempt=attempt,
            ),
            validate_fn=lambda result, attempt, trajectory: validate(
                subtask,
                result,
                model=r4a,
                attempt=attempt,
                trajectory=trajectory,
                workspace=tmp_path,
            ),
            on_result=lambda result, execution: sent.append(result),
            on_correction=lambda correction, validation: corrections.append(correction),
        )
    assert outcome.status == "matched" and outcome.output == "3"
    assert [r.output for r in sent] == ["a b c", "3"]
    assert [c.what_to_do for c in corrections] == ["use wc -l"]
    second_prompt = llm_server.requests_for("R3")[3].messages[1]["content"]
    assert "What to do instead: use wc -l" in second_prompt
    assert '- shell: {"command": "cat notes.txt"}' in second_prompt
    assert [g.score for g in outcome.gap_trajectory] == [0.5, 1.0]
    assert outcome.tool_calls == [
        'shell: {"command": "wc -l < notes.txt"} → [exit code 0]\n3'
    ]
    assert len(executions) == 2 and len(validations) == 2
