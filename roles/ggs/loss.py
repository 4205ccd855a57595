"""The GGS loss: ``L = α·D + β·(1−Ω)·P + λ·Ω`` (spec v0.8 §R7, paper §5.1).

Every component is rounded to ``DIGITS`` decimals, so a value that is exactly on a
threshold on paper (``Ω = 0.6 + 0.2``) is on it in floating point too, and the
inclusive/exclusive bounds of the decision table hold as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from roles.contracts import CriterionVerdict, SubTaskOutcome, normalise_criterion

DIGITS = 9

# The keyword fallback of the original (reference §7.2), except that permission
# errors are environmental here, as R4a's promotion regex classifies them.
_LOGICAL_WORDS = re.compile(
    r"logic|wrong approach|incorrect|invalid|cannot|not possible", re.IGNORECASE
)
_ENVIRONMENTAL_WORDS = re.compile(
    r"network|timeout|timed out|context deadline|connection|unavailable|not found|"
    r"no such file|temporary|rate limit|permission denied|operation not permitted|"
    r"\[law1\]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GGSConfig:
    """Hyperparameters of GGS (spec v0.8 defaults)."""

    alpha: float = 0.6
    beta: float = 0.3
    lam: float = 0.4
    w1: float = 0.6
    w2: float = 0.4
    epsilon: float = 0.1
    delta: float = 0.3
    rho: float = 0.5
    theta: float = 0.8
    time_budget_ms: int = 300_000
    max_replans: int = 3
    law2_kill: int = 2

    def __post_init__(self) -> None:
        """Refuse hyperparameters that make the loss meaningless."""
        for name in ("alpha", "beta", "lam", "w1", "w2", "epsilon", "delta", "rho"):
            if getattr(self, name) < 0:
                raise ValueError(f"GGSConfig.{name} must be >= 0")
        for name in ("theta", "time_budget_ms", "max_replans", "law2_kill"):
            if getattr(self, name) <= 0:
                raise ValueError(f"GGSConfig.{name} must be > 0")


def rounded(value: float) -> float:
    """Return ``value`` rounded to ``DIGITS`` decimals (and never ``-0.0``)."""
    return round(value, DIGITS) + 0.0


def distance(
    outcomes: Iterable[SubTaskOutcome],
    task_verdicts: Iterable[CriterionVerdict] = (),
    *,
    rejected: bool = False,
) -> float:
    """Return D, the weighted share of failed criteria, in [0, 1].

    A verifiable failure weighs 1; a plausible one k/N (failed in k of the N
    attempts of its subtask). An outcome without verdicts is one criterion, failed
    iff the outcome failed. R4b's task-criteria verdicts count as criteria too.
    ``rejected`` marks a round R4b sent back: when nothing in it failed (R4b could
    not give verdicts), one unverified task criterion counts as failed, so a
    rejection is never read as success. No criteria at all → 1.0.
    """
    failed = total = 0.0
    for outcome in outcomes:
        if not outcome.criteria_verdicts:
            total += 1
            failed += outcome.status == "failed"
            continue
        modes = _modes(outcome)
        for verdict in outcome.criteria_verdicts:
            total += 1
            failed += _failure_weight(verdict, modes, outcome)
    for verdict in task_verdicts:
        total += 1
        failed += _failure_weight(verdict, {}, None)
    if rejected and failed == 0:
        failed, total = failed + 1, total + 1
    return rounded(failed / total) if total else 1.0


def merge_rejected(
    outcomes: Iterable[SubTaskOutcome], task_verdicts: Iterable[CriterionVerdict]
) -> bool:
    """Return True when R4b sent a round back for its merged result itself.

    That is a failed task criterion, or a replan with every subtask matched. D
    may still be small (many criteria passed), but the answer is wrong by the
    task's own definition, so δ's "good enough" never applies to it.
    """
    if any(v.verdict != "pass" for v in task_verdicts):
        return True
    return not any(o.status == "failed" for o in outcomes)


def hard_failure(outcomes: Iterable[SubTaskOutcome]) -> bool:
    """Return True when a subtask failed on a fact, not on a judgement.

    That is a failed verifiable criterion, or a failure no failing verdict
    explains (the executor gave up or reported failure). δ's "good enough"
    tolerates plausible shortfalls only: a fact that does not hold, or work that
    was not done, is never delivered as success.
    """
    for outcome in outcomes:
        if outcome.status != "failed":
            continue
        modes = _modes(outcome)
        failing = [v for v in outcome.criteria_verdicts if v.verdict != "pass"]
        if not failing or any(
            modes.get(v.criterion, v.mode) == "verifiable" for v in failing
        ):
            return True
    return False


def _modes(outcome: SubTaskOutcome) -> dict[str, str]:
    criteria = (normalise_criterion(c) for c in outcome.success_criteria)
    return {c.criterion: c.mode for c in criteria}


def _failure_weight(
    verdict: CriterionVerdict, modes: dict[str, str], outcome: SubTaskOutcome | None
) -> float:
    if verdict.verdict == "pass":
        return 0.0
    # R2 fixes the mode at planning time; the verdict's copy is the fallback.
    if modes.get(verdict.criterion, verdict.mode) == "verifiable":
        return 1.0
    attempts = outcome.gap_trajectory if outcome else []
    if not attempts:
        return 1.0
    k = sum(verdict.criterion in point.unmet_criteria for point in attempts)
    # The final verdict failed, so at least the last attempt failed it.
    return max(k, 1) / len(attempts)


def implausibility(
    outcomes: Iterable[SubTaskOutcome], task_verdicts: Iterable[CriterionVerdict] = ()
) -> float:
    """Return P = logical / (logical + environmental) over failed criteria.

    Counts failed verdicts of failed outcomes and failed task-criteria verdicts;
    when none is classified, classifies failed outcomes by keywords; else 0.5.
    """
    failed_outcomes = [o for o in outcomes if o.status == "failed"]
    verdicts = [v for o in failed_outcomes for v in o.criteria_verdicts]
    verdicts += list(task_verdicts)
    classes = [v.failure_class for v in verdicts if v.verdict == "fail"]
    logical, environmental = classes.count("logical"), classes.count("environmental")
    if logical + environmental == 0:
        logical, environmental = _keyword_counts(failed_outcomes)
    if logical + environmental == 0:
        return 0.5
    return rounded(logical / (logical + environmental))


def _keyword_counts(failed_outcomes: list[SubTaskOutcome]) -> tuple[int, int]:
    logical = environmental = 0
    for outcome in failed_outcomes:
        unmet = (c for point in outcome.gap_trajectory for c in point.unmet_criteria)
        text = " ".join([outcome.failure_reason or "", *unmet])
        is_logical = bool(_LOGICAL_WORDS.search(text))
        is_environmental = bool(_ENVIRONMENTAL_WORDS.search(text))
        # An outcome matching both sides (or neither) says nothing about P.
        if is_logical != is_environmental:
            logical += is_logical
            environmental += is_environmental
    return logical, environmental


def resource_cost(replans: int, elapsed_ms: float, config: GGSConfig) -> float:
    """Return Ω = min(1, w1·replans/max_replans + w2·elapsed/time_budget)."""
    omega = (
        config.w1 * replans / config.max_replans
        + config.w2 * max(elapsed_ms, 0) / config.time_budget_ms
    )
    return rounded(min(1.0, omega))


def total_loss(d: float, p: float, omega: float, config: GGSConfig) -> float:
    """Return L = α·D + β·(1−Ω)·P + λ·Ω."""
    beta_eff = config.beta * (1.0 - omega)
    return rounded(config.alpha * d + beta_eff * p + config.lam * omega)
