"""The fast loop: R3 executes, R4a judges, one correction at most, one outcome.

The caller supplies the two halves as closures (so it decides which model,
toolbox and workspace they use) and two hooks that put the messages on the bus::

    outcome, executions, validations = run_fast_loop(
        subtask,
        execute_fn=lambda correction, attempt: execute(subtask, ...),
        validate_fn=lambda result, attempt, trajectory: validate(subtask, result, ...),
        on_result=send_execution_result,    # R3 → R4a
        on_correction=send_correction,      # R4a → R3
    )

It never raises: a cancel or an unexpected error in either half ends the loop
with a failed SubTaskOutcome naming the error (no retry), unless
``reraise_cancel`` asks for LLMCancelled to propagate. The one exception is a
tool call that waits on the operator: ToolPaused goes through with the loop's
state in ``state["fastloop"]``, which ``resume`` takes back later (the caller
resumes its executor with ``state["executor"]``).
"""

from __future__ import annotations

from collections.abc import Callable

from roles.agent_validator import Validation, failed_outcome
from roles.agent_validator_rederive import with_verdict
from roles.contracts import (
    CorrectionSignal,
    CriterionVerdict,
    ExecutionResult,
    GapPoint,
    SubTaskOutcome,
)
from roles.executor import Execution
from roles.llm.client import LLMCancelled
from roles.tools.errors import ToolPaused

ExecuteFn = Callable[[CorrectionSignal | None, int], Execution]
ValidateFn = Callable[[ExecutionResult, int, list[GapPoint]], Validation]
# A second derivation of a matched claim (roles.claims.rederive): its verdict,
# or None when the claim rests on no single computation.
RederiveFn = Callable[[ExecutionResult], CriterionVerdict | None]


def run_fast_loop(
    subtask,
    *,
    execute_fn: ExecuteFn,
    validate_fn: ValidateFn,
    on_result: Callable[[ExecutionResult, Execution], None] = lambda r, e: None,
    on_correction: Callable[[CorrectionSignal, Validation], None] = lambda c, v: None,
    max_attempts: int = 2,
    reraise_cancel: bool = False,
    resume: dict | None = None,
    rederive_fn: RederiveFn | None = None,
) -> tuple[SubTaskOutcome, list[Execution], list[Validation]]:
    """Run attempts until R4a matches or fails the subtask; return the outcome.

    With ``rederive_fn``, a matched attempt is judged once more by a second
    derivation of its answer, which may turn it into a retry or a failure.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    executions: list[Execution] = []
    validations: list[Validation] = []
    first, trajectory, correction = _resumed(resume or {})
    # What an earlier attempt did stays done: its calls go with the outcome.
    earlier = list((resume or {}).get("earlier_calls", []))
    for attempt in range(first, max_attempts + 1):
        execution = None
        try:
            execution = _stage("executor", execute_fn, correction, attempt)
            executions.append(execution)
            _stage("on_result", on_result, execution.result, execution)
            validation = _stage(
                "validator", validate_fn, execution.result, attempt, list(trajectory)
            )
            if rederive_fn is not None and validation.verdict == "matched":
                again = _stage("re-derivation", rederive_fn, execution.result)
                if again is not None:
                    validation = with_verdict(
                        validation,
                        again,
                        subtask,
                        execution.result,
                        attempt=attempt,
                        trajectory=list(trajectory),
                        max_attempts=max_attempts,
                    )
            validations.append(validation)
            trajectory.append(validation.gap)
            if not _should_retry(validation, attempt, max_attempts):
                outcome = _final(subtask, validation, trajectory, max_attempts)
                return _with(outcome, earlier), executions, validations
            earlier.extend(execution.result.tool_calls)
            correction = validation.correction
            _stage("on_correction", on_correction, correction, validation)
        except ToolPaused as paused:
            paused.state["fastloop"] = _paused(attempt, trajectory, correction, earlier)
            raise
        except LLMCancelled as err:
            if reraise_cancel:
                raise
            reason = f"cancelled: {str(err) or 'the run was cancelled'}"
        except _Broken as err:
            reason = str(err)
        else:
            continue
        outcome = _broken(subtask, reason, attempt, trajectory, execution)
        return _with(outcome, earlier), executions, validations
    raise AssertionError("unreachable: the last attempt always returns")


def _paused(
    attempt: int, trajectory: list[GapPoint], correction, earlier: list[str]
) -> dict:
    return {
        "attempt": attempt,
        "trajectory": [g.model_dump(mode="json") for g in trajectory],
        "correction": correction.model_dump(mode="json") if correction else None,
        "earlier_calls": list(earlier),
    }


def _with(outcome: SubTaskOutcome, earlier: list[str]) -> SubTaskOutcome:
    return outcome.model_copy(update={"earlier_calls": list(earlier)})


def _resumed(state: dict) -> tuple[int, list[GapPoint], CorrectionSignal | None]:
    correction = state.get("correction")
    return (
        int(state.get("attempt", 1)),
        [GapPoint.model_validate(g) for g in state.get("trajectory", [])],
        CorrectionSignal.model_validate(correction) if correction else None,
    )


class _Broken(Exception):
    """An unexpected error in one stage of an attempt, named by stage."""


def _stage(name: str, fn: Callable, *args):
    try:
        return fn(*args)
    except (LLMCancelled, ToolPaused):
        raise
    except Exception as err:  # noqa: BLE001 — the loop always ends in an outcome
        raise _Broken(f"{name} error: {type(err).__name__}: {err}") from err


def _should_retry(validation: Validation, attempt: int, max_attempts: int) -> bool:
    return (
        validation.verdict == "retry"
        and validation.correction is not None
        and attempt < max_attempts
    )


def _final(subtask, validation: Validation, trajectory, max_attempts) -> SubTaskOutcome:
    if validation.outcome is not None:
        return validation.outcome
    # A retry verdict on the last attempt, or one without a correction.
    wrong = validation.correction.what_was_wrong if validation.correction else ""
    reason = f"max attempts ({max_attempts}) reached; last issue: {wrong or 'unmet'}"
    outcome, _ = failed_outcome(
        subtask, reason, attempt=len(trajectory), trajectory=trajectory[:-1]
    )
    return outcome.model_copy(
        update={
            "criteria_verdicts": validation.verdicts,
            "gap_trajectory": list(trajectory),
        }
    )


def _broken(subtask, reason, attempt, trajectory, execution) -> SubTaskOutcome:
    """Return the failed outcome of an attempt that broke; its gap point is added."""
    last = execution.result if execution is not None else None
    judged = trajectory[: attempt - 1]
    outcome, _ = failed_outcome(
        subtask, reason, attempt=attempt, trajectory=judged, result=last
    )
    return outcome
