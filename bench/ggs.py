"""Print the median time of one GGS step (µs) for a replan round and an accept.

Run from the project root: ``python bench/ggs.py [--runs 5000]``.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import report  # noqa: E402
from roles.claims.evidence import format_evidence  # noqa: E402
from roles.contracts import (  # noqa: E402
    CriterionVerdict,
    GapPoint,
    OutcomeSummary,
    ReplanRequest,
    SubTaskOutcome,
)
from roles.ggs.solver import GGSState, step  # noqa: E402

RUNS = 5_000


def _outcome(n: int, status: str) -> SubTaskOutcome:
    return SubTaskOutcome(
        subtask_id=f"s{n}",
        parent_task_id="bench",
        intent=f"step {n}",
        status=status,
        criteria_verdicts=[
            CriterionVerdict(criterion=f"c{n}", verdict="fail", failure_class="logical")
            if status == "failed"
            else CriterionVerdict(criterion=f"c{n}", verdict="pass")
        ],
        gap_trajectory=[GapPoint(attempt=1, unmet_criteria=[f"c{n}"])],
        tool_calls=[
            format_evidence("shell", {"command": f"ls /data/{n}"}, "No such file"),
            format_evidence("search", {"query": f"topic {n}"}, "3 results"),
        ],
    )


def _median_us(state: GGSState, message, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        step(state, message)
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def main() -> None:
    """Print the median µs of one step on a 4-subtask round."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    runs = parser.parse_args().runs
    outcomes = [_outcome(n, "failed" if n % 2 else "matched") for n in range(4)]
    replan = ReplanRequest(task_id="bench", outcomes=outcomes, elapsed_ms=20_000)
    accept = OutcomeSummary(task_id="bench", summary="ok", outcomes=outcomes)
    state = GGSState(l_prev=0.7, replans=1, tried_targets=["ls /old"])
    for label, message in (("replan round", replan), ("accept", accept)):
        load = report.Load()
        median = _median_us(state, message, runs)
        print(f"ggs step, {label} (4 subtasks): median {median:.1f} µs")
        name = f"ggs.step {label.split()[0]}"
        report.figure(name, median, None, "≤", "µs", load)


if __name__ == "__main__":
    main()
