"""A run's control strategy: how the loop is steered after R4b's verdict.

The strategy is chosen per run (``Run.control``) and read here as data:

- ``ggs``: the Goal Gradient Solver of spec v0.8 (``roles.ggs.solver``), unchanged.
- ``retry``: the loop of spec v0.6, before GGS. R2 hears only "The previous
  attempt failed: <gap>. Try again.": no directive, no blocked tools or
  targets, no urgency. It plans again until R4b accepts, or R4b advises to stop
  (its third ReplanRequest of a run, as under GGS), or the budget (Ω ≥ θ, the
  same Ω as GGS) or the rounds (``max_replans``) run out.
- ``single``: one round and no replanning: R4b's accept, else an abandon that
  reports what the round did.
- ``warming``: ``retry`` with the planner's and the executor's temperature
  rising with the round, from 0 in the first to ``WARMEST`` (0.5) in the last
  (``temperature``): the strongest cheap baseline of the agent literature
  (plain and warming retries match far costlier loops on coding tasks).

Every strategy runs GGS's step first: its loss is the one measure that makes
strategies comparable, and R4b's accept ends a run under each of them. A
strategy that does not follow GGS then rewrites the answer to a failed round as
its row of ``STRATEGIES`` says; GGS's own ends (δ's "good enough", Law 2) are
GGS's decisions, so they do not apply to it. R4b's advice to stop is R4b's, a
role every strategy shares, so every strategy that replans gets the same rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import get_args

from roles.contracts import (
    Control,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
)
from roles.ggs import solver as ggs
from roles.ggs.loss import GGSConfig
from roles.ggs.megrams import infrastructure_only, make_megram, terminal_content
from roles.ggs.output import Round, failure_class, terminal_rationale
from roles.ggs.state import final_result
from roles.ggs.summary import abandon_reason, terminal_report

__all__ = [
    "DEFAULT",
    "NAMES",
    "STRATEGIES",
    "Strategy",
    "retry_text",
    "step",
    "strategy_of",
    "temperature",
]

DEFAULT = "ggs"
WARMEST = 0.5
# The roles a warming strategy warms: the planner and the executor, never the
# validators (the same validators judge every strategy).
WARMED = ("R2", "R3")
RETRY_TEXT = "The previous attempt failed{gap}. Try again."


@dataclass(frozen=True)
class Strategy:
    """One row of the strategy table: what a strategy does after a failed round."""

    name: str
    label: str
    # GGS decides: R2 hears its directive (blocked tools and targets, urgency)
    # and its own ends apply.
    follows_ggs: bool
    # A failed round may be followed by a new plan.
    replans: bool
    # The planner's and executor's temperature in the last round (None: theirs).
    warmest: float | None = None


STRATEGIES: dict[str, Strategy] = {
    "ggs": Strategy("ggs", "Goal Gradient Solver (directed replanning)", True, True),
    "retry": Strategy("retry", "plain retry (failed: gap, try again)", False, True),
    "single": Strategy("single", "single round (no replanning)", False, False),
    "warming": Strategy(
        "warming", "warming retry (temperature 0 → 0.5)", False, True, WARMEST
    ),
}
NAMES: tuple[str, ...] = get_args(Control)


def strategy_of(name: str) -> Strategy:
    """Return the strategy called ``name``; raise ValueError naming the choices."""
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        choices = ", ".join(NAMES)
        raise ValueError(
            f"unknown control strategy {name!r}: use one of {choices}"
        ) from None


def temperature(
    control: str,
    role: str,
    round_: int,
    config: GGSConfig = GGSConfig(),  # noqa: B008
) -> float | None:
    """Return the temperature ``role`` samples at in round ``round_`` (0 is the
    first plan) under strategy ``control``, or None for the role's own: a
    warming strategy rises evenly from 0 to its warmest at ``max_replans``."""
    strategy = STRATEGIES.get(control)
    if strategy is None or strategy.warmest is None or role not in WARMED:
        return None
    share = min(max(round_, 0), config.max_replans) / max(config.max_replans, 1)
    return round(strategy.warmest * share, 3)


def retry_text(gap: str) -> str:
    """Return all R2 hears on a retry replan."""
    gap = " ".join(gap.split()).rstrip(".")
    return RETRY_TEXT.format(gap=f": {gap}" if gap else "")


@dataclass(frozen=True)
class _Given:
    message: ReplanRequest
    config: GGSConfig
    run_outcomes: Sequence[SubTaskOutcome]
    now: datetime | None
    id_factory: Callable[[], str] | None


def step(
    control: str,
    state: ggs.GGSState,
    message: ReplanRequest | OutcomeSummary,
    config: GGSConfig = GGSConfig(),  # noqa: B008 - frozen, so sharing is safe
    *,
    human_wait_ms: float = 0,
    now: datetime | None = None,
    id_factory: Callable[[], str] | None = None,
    run_outcomes: Sequence[SubTaskOutcome] = (),
) -> ggs.StepResult:
    """Return the answer of strategy ``control`` to ``message`` (see the module).

    The arguments after ``control`` are ``roles.ggs.solver.step``'s. Raise ValueError
    for an unknown strategy.
    """
    strategy = strategy_of(control)
    result = ggs.step(
        state,
        message,
        config,
        human_wait_ms=human_wait_ms,
        now=now,
        id_factory=id_factory,
        run_outcomes=run_outcomes,
    )
    if strategy.follows_ggs:
        return result
    if isinstance(message, OutcomeSummary):
        # R4b's accept ends the run under every strategy.
        output = result.output.model_copy(update={"control": strategy.name})
        return replace(result, output=output)
    given = _Given(message, config, run_outcomes or message.outcomes, now, id_factory)
    rnd = _round_of(result)
    cause = _end_cause(strategy, rnd, config, message.recommendation)
    if cause:
        return _abandon(strategy.name, state, result, replace(rnd, cause=cause), given)
    return _retry(strategy.name, state, result, rnd, given)


def _end_cause(
    strategy: Strategy, rnd: Round, config: GGSConfig, recommendation: str
) -> str:
    """Return why a failed round ends the run under ``strategy``, or ""."""
    if not strategy.replans:
        return "single"
    if recommendation == "abandon":
        return "recommendation"
    if rnd.omega >= config.theta:
        return "budget"
    return "rounds" if rnd.replans > config.max_replans else ""


def _round_of(result: ggs.StepResult) -> Round:
    """Return the numbers GGS measured this round, its decision set aside."""
    out, state = result.output, result.state
    loss = out.loss
    return Round(
        d=loss.D,
        p=loss.P,
        omega=loss.Omega,
        l=loss.L,
        grad=out.grad_l,
        replans=state.replans,
        directive=out.directive,
        worsening_count=state.worsening_count,
    )


def _retry(
    name: str, state: ggs.GGSState, result: ggs.StepResult, rnd: Round, given: _Given
) -> ggs.StepResult:
    """Return the plain replan: the gap, and the loss kept only for the record."""
    directive = PlanDirective(
        task_id=given.message.task_id,
        loss=rnd.loss,
        prev_directive=state.prev_directive,
        directive="retry",
        failure_class=failure_class(rnd.p, given.config),
        budget_pressure=0.0,
        grad_l=rnd.grad,
        rationale=retry_text(given.message.gap_summary),
        control=name,
    )
    # No Megram per failing target: with no directive there is nothing to
    # quantize it by (spec v0.6 writes memory on completion or failure only).
    next_state = result.state.model_copy(update={"prev_directive": "retry"})
    return ggs.StepResult(output=directive, state=next_state, megrams=[])


def _abandon(
    name: str, state: ggs.GGSState, result: ggs.StepResult, rnd: Round, given: _Given
) -> ggs.StepResult:
    """Return the abandon of ``rnd``, reported as GGS reports its own."""
    message, config = given.message, given.config
    gap = message.gap_summary
    rnd = replace(rnd, directive="abandon")
    summary, output = terminal_report(rnd, given.run_outcomes, gap, config)
    text = (summary, output, terminal_rationale(rnd, config, gap))
    reason = abandon_reason(rnd, given.run_outcomes, gap)
    final = final_result(state, message.task_id, rnd, text, reason=reason, control=name)
    megram = make_megram(
        f"intent:{message.task_id}",
        "env:local",
        terminal_content("abandon", message.outcomes, gap),
        "abandon",
        now=given.now,
        id_factory=given.id_factory,
    )
    kept = [] if infrastructure_only(message.outcomes) else [megram]
    next_state = result.state.model_copy(update={"prev_directive": "abandon"})
    return ggs.StepResult(output=final, state=next_state, megrams=kept)
