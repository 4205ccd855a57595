"""The R3 ⇄ R4a fast loop: budget, hooks, and an outcome on every path."""

from __future__ import annotations

import pytest

from roles.agent_validator import validate
from roles.claims.evidence import format_evidence
from roles.contracts import Criterion, ExecutionResult, SubTask
from roles.executor import Execution
from roles.fastloop import run_fast_loop
from roles.llm.client import LLMCancelled
from roles.llm.offline import OfflineModel

SUBTASK = SubTask(
    subtask_id="s1",
    parent_task_id="t1",
    intent="print the greeting",
    success_criteria=[
        Criterion(
            criterion="output says hello",
            check={"type": "output_contains", "value": "hello"},
        )
    ],
)


class Script:
    """An executor stand-in that answers each attempt with the next output."""

    def __init__(self, *outputs):
        self.outputs = list(outputs)
        self.seen = []

    def __call__(self, correction, attempt):
        self.seen.append((correction, attempt))
        output = self.outputs.pop(0)
        if isinstance(output, BaseException):
            raise output
        # What the tool showed is the evidence; the output repeats it.
        shown = format_evidence(
            "shell", {"command": "greet"}, f"[exit code 0]\n{output}"
        )
        result = ExecutionResult(
            subtask_id="s1", status="completed", output=output, tool_calls=[shown]
        )
        return Execution(result, None, [])


def judge(tmp_path, max_attempts=2):
    def validate_fn(result, attempt, trajectory):
        return validate(
            SUBTASK,
            result,
            model=OfflineModel(),
            attempt=attempt,
            trajectory=trajectory,
            workspace=tmp_path,
            max_attempts=max_attempts,
        )

    return validate_fn


def run(script, tmp_path, **kwargs):
    sent, corrections = [], []
    outcome, executions, validations = run_fast_loop(
        SUBTASK,
        execute_fn=script,
        validate_fn=kwargs.pop("validate_fn", judge(tmp_path)),
        on_result=lambda result, execution: sent.append(result.output),
        on_correction=lambda correction, validation: corrections.append(correction),
        **kwargs,
    )
    return outcome, executions, validations, sent, corrections


def test_a_first_attempt_that_meets_the_criteria_is_matched(tmp_path):
    outcome, executions, _, sent, corrections = run(Script("hello"), tmp_path)
    assert outcome.status == "matched"
    assert sent == ["hello"] and corrections == [] and len(executions) == 1
    assert [g.score for g in outcome.gap_trajectory] == [1.0]


def test_a_miss_is_retried_once_with_the_correction(tmp_path):
    script = Script("goodbye", "hello")
    outcome, _, validations, sent, corrections = run(script, tmp_path)
    assert outcome.status == "matched"
    assert sent == ["goodbye", "hello"]
    assert [c.failed_criterion for c in corrections] == ["output says hello"]
    assert len(outcome.earlier_calls) == 1 and "goodbye" in outcome.earlier_calls[0]
    assert len(outcome.tool_calls) == 1 and "hello" in outcome.tool_calls[0]
    assert script.seen[1] == (corrections[0], 2)
    assert [g.score for g in outcome.gap_trajectory] == [0.0, 1.0]
    assert [v.verdict for v in validations] == ["retry", "matched"]


def test_two_misses_fail_the_subtask_after_two_attempts(tmp_path):
    outcome, executions, _, _, corrections = run(Script("no", "still no"), tmp_path)
    assert outcome.status == "failed"
    assert outcome.failure_reason.startswith("max attempts (2) reached")
    assert len(executions) == 2 and len(corrections) == 1
    assert len(outcome.gap_trajectory) == 2


def test_an_executor_error_fails_without_retry_and_names_the_error(tmp_path):
    script = Script(RuntimeError("disk on fire"), "hello")
    outcome, executions, _, sent, _ = run(script, tmp_path)
    assert outcome.status == "failed"
    assert outcome.failure_reason == "executor error: RuntimeError: disk on fire"
    assert executions == [] and sent == [] and len(script.seen) == 1
    assert outcome.criteria_verdicts[0].failure_class == "environmental"
    assert outcome.gap_trajectory[0].attempt == 1


def test_a_cancel_ends_the_loop_with_a_failed_outcome(tmp_path):
    outcome, *_ = run(Script("no", LLMCancelled("run stopped")), tmp_path)
    assert outcome.status == "failed"
    assert outcome.failure_reason == "cancelled: run stopped"
    assert [g.attempt for g in outcome.gap_trajectory] == [1, 2]


def test_a_cancel_can_be_reraised(tmp_path):
    with pytest.raises(LLMCancelled):
        run(Script(LLMCancelled("stop")), tmp_path, reraise_cancel=True)


def test_a_validator_error_fails_and_keeps_the_attempts_output(tmp_path):
    def broken(result, attempt, trajectory):
        raise ValueError("bad rubric")

    outcome, executions, *_ = run(Script("hello"), tmp_path, validate_fn=broken)
    assert outcome.failure_reason == "validator error: ValueError: bad rubric"
    assert outcome.output == "hello" and len(executions) == 1


def test_a_failing_bus_hook_still_ends_in_an_outcome(tmp_path):
    def on_result(result, execution):
        raise ConnectionError("redis down")

    outcome, *_ = run_fast_loop(
        SUBTASK,
        execute_fn=Script("hello"),
        validate_fn=judge(tmp_path),
        on_result=on_result,
    )
    assert outcome.status == "failed"
    assert outcome.failure_reason == "on_result error: ConnectionError: redis down"


def test_a_budget_of_one_attempt_never_corrects(tmp_path):
    outcome, executions, _, _, corrections = run(
        Script("no"), tmp_path, validate_fn=judge(tmp_path, 1), max_attempts=1
    )
    assert outcome.status == "failed" and corrections == [] and len(executions) == 1


def test_max_attempts_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="max_attempts"):
        run(Script(), tmp_path, max_attempts=0)


def test_a_retry_verdict_on_the_last_attempt_still_ends_in_failure(tmp_path):
    outcome, executions, _, _, corrections = run(
        Script("no", "still no"), tmp_path, validate_fn=judge(tmp_path, 3)
    )
    assert outcome.status == "failed" and len(executions) == 2
    assert outcome.failure_reason.startswith("max attempts (2) reached; last issue:")
    assert [g.attempt for g in outcome.gap_trajectory] == [1, 2]
    assert outcome.criteria_verdicts[0].verdict == "fail"


def reported_failure(command: str, output: str) -> ExecutionResult:
    shown = format_evidence("shell", {"command": command}, output)
    return ExecutionResult(
        subtask_id="s1", status="failed", output=output, tool_calls=[shown]
    )


def validated(result: ExecutionResult, tmp_path, attempt: int = 1):
    return validate(
        SUBTASK,
        result,
        model=OfflineModel(),
        attempt=attempt,
        trajectory=[],
        workspace=tmp_path,
    )


@pytest.mark.parametrize(
    "output",
    [
        "[exit code 75]\nerror: upstream busy, try again",
        "[exit code 75]\n",
        "[exit code 1]\ncurl: (56) Resource temporarily unavailable",
    ],
)
def test_a_command_that_failed_for_a_temporary_reason_is_run_again(tmp_path, output):
    validation = validated(reported_failure("./report.sh", output), tmp_path)

    assert validation.verdict == "retry"
    assert validation.correction.what_to_do == "Run the same command again: ./report.sh"
    assert validation.correction.failure_class == "environmental"
    assert validation.correction.what_was_wrong.startswith("`./report.sh` failed")
    last = validated(reported_failure("./report.sh", output), tmp_path, attempt=2)
    assert last.verdict == "failed"


def test_a_failure_that_does_not_say_it_is_temporary_stops_the_subtask(tmp_path):
    result = reported_failure("./report.sh", "[exit code 1]\nerror: bad column")
    validation = validated(result, tmp_path)

    assert validation.verdict == "failed"
    assert validation.correction is None


def test_a_temporary_failure_run_again_with_success_is_not_rerun(tmp_path):
    calls = [
        format_evidence("shell", {"command": "./report.sh"}, out)
        for out in ("[exit code 75]\nbusy, try again", "[exit code 0]\nbye")
    ]
    result = ExecutionResult(
        subtask_id="s1", status="completed", output="bye", tool_calls=calls
    )
    validation = validated(result, tmp_path)

    assert validation.verdict == "retry"
    assert "try again" not in validation.correction.what_was_wrong


@pytest.mark.parametrize(
    "error",
    [
        "ERROR: no such file: /w/db/config.yaml (no file named 'config.yaml' under "
        "/w/db; files of the same name with another extension: db/config.yml)",
        "ERROR: blocked by GGS: path 'db/config.yaml' failed in an earlier round — "
        "choose another approach (no file named 'config.yaml' under /w/db; files of "
        "the same name with another extension: db/config.yml)",
    ],
)
def test_a_read_whose_error_names_the_file_to_read_is_retried_on_it(tmp_path, error):
    shown = format_evidence("read_file", {"path": "db/config.yaml"}, error)
    result = ExecutionResult(
        subtask_id="s1", status="failed", output="no such file", tool_calls=[shown]
    )
    validation = validated(result, tmp_path)

    assert validation.verdict == "retry"
    assert validation.correction.what_to_do == (
        "Read the file it names instead: db/config.yml"
    )
    assert validation.correction.failure_class == "environmental"


def test_a_command_told_of_the_file_to_read_is_retried_on_it(tmp_path):
    # renamed-file: grep was told "No such file or directory" for the path the
    # user stated; the shell result's hint names the file of another extension.
    said = (
        "[exit code 2]\ngrep: /w/db/config.yaml: No such file or directory\n"
        "[no such file: /w/db/config.yaml (no file named 'config.yaml' under /w/db;"
        " files of the same name with another extension: db/config.yml)]"
    )
    shown = format_evidence("shell", {"command": "grep max /w/db/config.yaml"}, said)
    result = ExecutionResult(
        subtask_id="s1", status="completed", output="max is 10", tool_calls=[shown]
    )
    validation = validated(result, tmp_path)

    assert validation.verdict == "retry"
    assert validation.correction.what_to_do == (
        "Read the file it names instead: db/config.yml"
    )
    assert validation.correction.what_was_wrong == (
        "there is no file /w/db/config.yaml, but the error names db/config.yml"
    )
    # A file the attempt deleted is missing on purpose: nothing to read instead.
    removed = format_evidence(
        "shell", {"command": "rm /w/db/config.yaml"}, "[exit code 0]\n"
    )
    result.tool_calls[:] = [removed, shown]
    deleted = validated(result, tmp_path)
    assert "Read the file it names" not in deleted.correction.what_to_do


def test_a_read_of_a_missing_file_with_nothing_named_stops_the_subtask(tmp_path):
    error = "ERROR: no such file: /w/x.txt (no file named 'x.txt' under /w; to find"
    shown = format_evidence("read_file", {"path": "x.txt"}, error + " …)")
    result = ExecutionResult(
        subtask_id="s1", status="failed", output="no such file", tool_calls=[shown]
    )
    assert validated(result, tmp_path).verdict == "failed"


@pytest.mark.parametrize(
    "output",
    [
        "curl: (6) Could not resolve host: example.org",
        "curl: (7) Couldn't connect to server",
        "bash: connect: Network is unreachable",
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
    ],
)
def test_what_a_command_without_network_prints_is_an_environmental_cause(output):
    # Commands run in a network namespace of their own by default: these are
    # what a fetch from the shell prints there, whatever the program.
    from roles.agent_validator import ENVIRONMENTAL
    from roles.claims.evidence import _FAILED_OUTPUT

    assert ENVIRONMENTAL.search(output)
    assert _FAILED_OUTPUT.search(output)
