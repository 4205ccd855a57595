"""Offline R3 and R4a: one command line, the real shell, the machine checks."""

from __future__ import annotations

import threading

import pytest

from roles.agent_validator import validate
from roles.contracts import Criterion, SubTask
from roles.executor import execute
from roles.fastloop import run_fast_loop
from roles.llm.offline import OfflineModel
from roles.tools import ApprovalAsk, Toolbox, ToolboxConfig

EXIT_0 = Criterion(criterion="exit status 0", check={"type": "exit_code", "value": 0})


def offline_subtask(line: str, *criteria: Criterion) -> SubTask:
    """Build the subtask the offline planner makes of one task line."""
    return SubTask(
        subtask_id="sub-1",
        parent_task_id="task-1",
        intent=line,
        context=f"command: {line}",
        success_criteria=list(criteria) or [EXIT_0],
    )


def run_offline(subtask, workspace, config=ToolboxConfig(), *, model=None, **live):
    model = model or OfflineModel()
    toolbox = Toolbox(workspace, config, **live)
    return run_fast_loop(
        subtask,
        execute_fn=lambda correction, attempt: execute(
            subtask,
            model=model,
            toolbox=toolbox,
            correction=correction,
            attempt=attempt,
        ),
        validate_fn=lambda result, attempt, trajectory: validate(
            subtask,
            result,
            model=model,
            attempt=attempt,
            trajectory=trajectory,
            workspace=workspace,
        ),
    )


def test_echo_hello_with_an_expectation_is_matched_with_canonical_evidence(tmp_path):
    line = "echo hello # expect: hel+o"
    expect = Criterion(
        criterion="output matches hel+o",
        check={"type": "output_matches", "pattern": "hel+o"},
    )
    outcome, executions, _ = run_offline(
        offline_subtask(line, EXIT_0, expect), tmp_path
    )
    assert outcome.status == "matched"
    assert outcome.tool_calls == [
        'shell: {"command": "echo hello # expect: hel+o"} → [exit code 0]\nhello'
    ]
    assert [v.verdict for v in outcome.criteria_verdicts] == ["pass", "pass"]
    assert [v.mode for v in outcome.criteria_verdicts] == ["verifiable", "verifiable"]
    assert executions[0].result.status == "completed" and executions[0].usage is None
    assert outcome.output == "[exit code 0]\nhello\n"


def test_listing_a_missing_path_fails_as_environmental(tmp_path):
    outcome, executions, validations = run_offline(
        offline_subtask("ls /nonexistent"), tmp_path
    )
    assert outcome.status == "failed"
    verdict = outcome.criteria_verdicts[0]
    assert (verdict.verdict, verdict.failure_class) == ("fail", "environmental")
    assert verdict.evidence == "exit code 2 (expected 0)"
    assert [g.failure_class for g in outcome.gap_trajectory] == [
        "environmental",
        "environmental",
    ]
    assert validations[0].correction.failure_class == "environmental"
    assert "No such file" in outcome.tool_calls[0]


def test_a_wrong_output_is_a_logical_failure(tmp_path):
    expect = Criterion(
        criterion="output matches ^bye",
        check={"type": "output_matches", "pattern": "^bye"},
    )
    outcome, *_ = run_offline(offline_subtask("echo hello", EXIT_0, expect), tmp_path)
    assert outcome.status == "failed"
    assert [v.verdict for v in outcome.criteria_verdicts] == ["pass", "fail"]
    assert outcome.gap_trajectory[-1].failure_class == "logical"
    assert outcome.gap_trajectory[-1].score == 0.5


def test_rm_without_approval_never_runs_and_fails_without_retry(tmp_path):
    (tmp_path / "x").write_text("precious")
    outcome, executions, _ = run_offline(offline_subtask("rm -rf x"), tmp_path)
    assert (tmp_path / "x").read_text() == "precious"
    assert len(executions) == 1 and executions[0].result.status == "failed"
    assert outcome.status == "failed"
    assert outcome.failure_reason.startswith("Law 1: [LAW1] rm deletes files")
    assert outcome.criteria_verdicts[0].failure_class == "environmental"


def test_rm_with_the_operators_approval_runs(tmp_path):
    (tmp_path / "x").write_text("old")
    asks: list[ApprovalAsk] = []
    outcome, *_ = run_offline(
        offline_subtask("rm -rf x"),
        tmp_path,
        approve=lambda ask: asks.append(ask) or True,
    )
    assert outcome.status == "matched" and not (tmp_path / "x").exists()
    assert [a.command for a in asks] == ["rm -rf x"]


def test_a_timed_out_command_fails_as_environmental(tmp_path):
    outcome, executions, _ = run_offline(
        offline_subtask("sleep 30"),
        tmp_path,
        ToolboxConfig(shell_timeout_s=0.3, kill_grace_s=0.1),
    )
    assert executions[0].result.status == "failed"
    assert outcome.status == "failed" and len(executions) == 1
    assert outcome.criteria_verdicts[0].failure_class == "environmental"
    assert "timed out" in outcome.tool_calls[0]


def test_a_criterion_without_check_passes_because_the_command_ran(tmp_path):
    plain = Criterion(criterion="the greeting is printed")
    outcome, *_ = run_offline(offline_subtask("echo hi", plain), tmp_path)
    assert outcome.status == "matched"
    assert outcome.criteria_verdicts[0].evidence == (
        "no machine check: passes because the executor status is completed"
    )


def test_the_offline_model_pauses_once_per_would_be_model_call(tmp_path):
    pauses: list[float] = []
    model = OfflineModel(latency_ms=7, sleep=pauses.append)
    plain = Criterion(criterion="the greeting is printed")
    run_offline(offline_subtask("echo hi", EXIT_0), tmp_path, model=model)
    assert pauses == [0.007]  # R3 only: every criterion had a machine check
    run_offline(offline_subtask("echo hi", plain), tmp_path, model=model)
    assert pauses == [0.007] * 3


def test_a_cancelled_run_ends_in_a_failed_outcome(tmp_path):
    stop = threading.Event()
    stop.set()
    outcome, executions, _ = run_offline(
        offline_subtask("echo never"), tmp_path, cancelled=stop.is_set
    )
    assert outcome.status == "failed"
    assert outcome.failure_reason.startswith("cancelled:")
    assert executions == []


def test_the_command_comes_from_the_intent(tmp_path):
    subtask = offline_subtask("echo from-intent").model_copy(
        update={"context": "command: echo from-context"}
    )
    execution = execute(subtask, model=OfflineModel(), toolbox=Toolbox(tmp_path))
    assert execution.result.output == "[exit code 0]\nfrom-intent\n"
    assert [c.args for c in execution.calls] == [{"command": "echo from-intent"}]


@pytest.mark.parametrize("attempt", [0, -1])
def test_execute_rejects_a_bad_attempt_number(tmp_path, attempt):
    with pytest.raises(ValueError, match="attempt"):
        execute(
            offline_subtask("true"),
            model=OfflineModel(),
            toolbox=Toolbox(tmp_path),
            attempt=attempt,
        )
