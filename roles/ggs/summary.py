"""What a run's end says it did: the summary and output of a FinalResult.

The outcomes given are the run's, across rounds (``RunState.outcomes_so_far``):
work a round completed stays completed when a later round fails or runs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from roles.claims.evidence import split_exit_code
from roles.contracts import SubTaskOutcome
from roles.ggs.loss import GGSConfig
from roles.ggs.output import Round, abandon_cause, stop_reason

# How much of a completed subtask's output an abandon summary shows.
OUTPUT_HEAD = 80
# What an accept's summary says before the work of earlier rounds.
EARLIER_WORK = "Also completed in earlier rounds:"


def accept_summary(
    summary: str,
    run_outcomes: Sequence[SubTaskOutcome],
    outcomes: Sequence[SubTaskOutcome],
) -> str:
    """Return R4b's summary of an accept, plus what earlier rounds completed.

    R4b merged and verified this round's outputs only; work an earlier round
    completed, which this round did not redo, is still part of the result.
    """
    redone = {_key(o) for o in outcomes}
    earlier = [o for o in run_outcomes if _key(o) not in redone]
    done, _ = _split(earlier, with_output=True)
    if not done:
        return summary
    return f"{summary} {EARLIER_WORK} {'; '.join(done)}."


def success_summary(
    rnd: Round, outcomes: Sequence[SubTaskOutcome], gap: str, config: GGSConfig
) -> str:
    """Return the FinalResult summary of a success (D ≤ δ) round."""
    done, failed = _split(outcomes)
    parts = [
        f"Task completed within the convergence threshold (D={rnd.d:.2f} ≤ "
        f"δ={config.delta})."
    ]
    if done:
        parts.append(f"Completed: {'; '.join(done)}.")
    if failed:
        parts.append(f"Failed but within threshold: {'; '.join(failed)}.")
    if gap:
        parts.append(gap)
    return " ".join(parts)


def terminal_report(
    rnd: Round, outcomes: Sequence[SubTaskOutcome], gap: str, config: GGSConfig
) -> tuple[str, Any]:
    """Return the summary and output of a success or abandon FinalResult.

    ``outcomes`` are the run's, across rounds: work a round completed stays
    completed when a later round fails or runs nothing.
    """
    if rnd.directive == "success":
        return success_summary(rnd, outcomes, gap, config), matched_output(outcomes)
    return abandon_summary(rnd, outcomes, gap, config), None


def abandon_summary(
    rnd: Round, outcomes: Sequence[SubTaskOutcome], gap: str, config: GGSConfig
) -> str:
    """Return the FinalResult summary of an abandon: done, failed and the gap.

    An abandon delivers no output, so each completed subtask shows its output's
    head here.
    """
    done, failed = _split(outcomes, with_output=True)
    parts = [f"Task abandoned: {abandon_cause(rnd, config)}."]
    parts.append(f"Completed: {'; '.join(done)}." if done else "Completed: nothing.")
    if failed:
        parts.append(f"Failed: {'; '.join(failed)}.")
    if gap:
        parts.append(f"Gap: {gap}")
    parts.append(
        "Consider breaking the task into smaller steps or retrying with more "
        "specific instructions."
    )
    summary = " ".join(parts)
    # Law 1 refusals must reach the user (paper §9): the run stopped on purpose.
    return f"[LAW1] {summary}" if _mentions_law1(outcomes) else summary


def abandon_reason(rnd: Round, outcomes: Sequence[SubTaskOutcome], gap: str) -> str:
    """Return why an abandon stopped, for the user; empty for any other end.

    What was still missing is said only when no step failed: the failed steps'
    own reasons say it otherwise.
    """
    if rnd.directive != "abandon":
        return ""
    failed = any(o.status != "matched" for o in outcomes)
    return stop_reason(rnd, "" if failed else gap)


def matched_output(outcomes: Sequence[SubTaskOutcome]) -> Any:
    """Return the outputs of matched outcomes: None, the single one, or a list."""
    outputs = [o.output for o in outcomes if o.status == "matched" and o.output]
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs


def _split(
    outcomes: Sequence[SubTaskOutcome], *, with_output: bool = False
) -> tuple[list[str], list[str]]:
    def done_label(outcome: SubTaskOutcome) -> str:
        head = _output_head(outcome.output) if with_output else ""
        return f"{_key(outcome)} → {head}" if head else _key(outcome)

    done = [done_label(o) for o in outcomes if o.status == "matched"]
    return done, [_key(o) for o in outcomes if o.status != "matched"]


def _output_head(output: Any) -> str:
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, default=str)
    _, text = split_exit_code(text.strip())
    text = " ".join(text.split())
    return text if len(text) <= OUTPUT_HEAD else text[:OUTPUT_HEAD] + "…"


def _mentions_law1(outcomes: Sequence[SubTaskOutcome]) -> bool:
    return any(
        "[LAW1]" in (o.failure_reason or "") or any("[LAW1]" in c for c in o.tool_calls)
        for o in outcomes
        if o.status == "failed"
    )


def _key(outcome: SubTaskOutcome) -> str:
    return outcome.intent or outcome.subtask_id
