"""R7, the Goal Gradient Solver: one pure step of the medium-loop controller.

``step(state, message)`` reads R4b's ReplanRequest or OutcomeSummary and the run's
GGS state, and returns the PlanDirective or FinalResult to send, the next state
and the Megrams to write. It never reads a clock: Megram ids and times come from
the injected ``id_factory`` and ``now``, and stay empty otherwise.
The state and the results it hands back are in ``roles.ggs.state``.

The decision follows spec v0.8 §R7: Ω ≥ θ → abandon; D ≤ δ → success; then
|∇L| ≥ ε (signal) and P > ρ (logical) choose among break_symmetry,
change_approach, change_path and refine. Law 2 and R4b's abandon recommendation
turn an action into abandon, never a success.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from roles.contracts import (
    Megram,
    OutcomeSummary,
    PlanDirective,
    ReplanRequest,
    SubTaskOutcome,
)
from roles.ggs.blocks import (
    blocked_targets,
    blocked_tools,
    call_key,
    failed_targets,
    is_failed_result,
    repeated_targets,
)
from roles.ggs.loss import (
    GGSConfig,
    distance,
    hard_failure,
    implausibility,
    merge_rejected,
    resource_cost,
    rounded,
    total_loss,
)
from roles.ggs.megrams import (
    action_megrams,
    calls_of,
    infrastructure_only,
    make_megram,
    terminal_content,
)
from roles.ggs.output import (
    Round,
    action_rationale,
    dedupe,
    failed_criterion,
    failure_class,
    terminal_rationale,
)
from roles.ggs.state import (
    GGSState,
    StepResult,
    final_result,
    forced_abandon,
    state_after,
)
from roles.ggs.summary import abandon_reason, accept_summary, terminal_report

__all__ = [
    "GGSConfig",
    "GGSState",
    "StepResult",
    "forced_abandon",
    "select_directive",
    "step",
]

TERMINAL = frozenset({"accept", "success", "abandon"})


@dataclass(frozen=True)
class _Given:
    now: datetime | None
    id_factory: Callable[[], str] | None
    run_outcomes: Sequence[SubTaskOutcome]


def step(
    state: GGSState,
    message: ReplanRequest | OutcomeSummary,
    config: GGSConfig = GGSConfig(),  # noqa: B008 - frozen, so sharing is safe
    *,
    human_wait_ms: float = 0,
    now: datetime | None = None,
    id_factory: Callable[[], str] | None = None,
    run_outcomes: Sequence[SubTaskOutcome] = (),
) -> StepResult:
    """Return GGS's answer to ``message`` given the run's ``state``.

    ``human_wait_ms`` (time spent waiting on approvals and answers) is taken off
    the elapsed time, so it does not count toward Ω. ``run_outcomes``, every
    subtask's outcome across the run's rounds, is what a success or an abandon
    reports as done and failed (by default, this round's outcomes): the loss
    judges the round, the result tells what the run did.
    """
    if not isinstance(state, GGSState):
        raise TypeError(f"state must be a GGSState, not {type(state).__name__}")
    if not isinstance(config, GGSConfig):
        raise TypeError(f"config must be a GGSConfig, not {type(config).__name__}")
    if isinstance(human_wait_ms, bool) or not isinstance(human_wait_ms, int | float):
        raise TypeError("human_wait_ms must be a number of milliseconds")
    if human_wait_ms < 0:
        raise ValueError("human_wait_ms must be >= 0")
    if not isinstance(message, ReplanRequest | OutcomeSummary):
        raise TypeError(
            "message must be a ReplanRequest or an OutcomeSummary, "
            f"not {type(message).__name__}"
        )
    elapsed = max(0.0, message.elapsed_ms - human_wait_ms)
    handler = _accept if isinstance(message, OutcomeSummary) else _replan
    given = _Given(now, id_factory, run_outcomes or message.outcomes)
    return handler(state, message, elapsed, config, given)


def select_directive(
    grad: float, d: float, p: float, omega: float, config: GGSConfig
) -> str:
    """Return the macro-state of the v0.8 cascade for these numbers."""
    if omega >= config.theta:
        return "abandon"
    if d <= config.delta:
        return "success"
    has_signal = abs(grad) >= config.epsilon
    if p > config.rho:
        return "change_approach" if has_signal else "break_symmetry"
    return "refine" if has_signal else "change_path"


def _gradient(l_now: float, state: GGSState) -> float:
    return 0.0 if state.l_prev is None else rounded(l_now - state.l_prev)


def _accept(
    state: GGSState,
    message: OutcomeSummary,
    elapsed: float,
    config: GGSConfig,
    given: _Given,
) -> StepResult:
    # Accept does not count as a replan: Ω uses the rounds already spent.
    omega = resource_cost(state.replans, elapsed, config)
    d, p = 0.0, 0.5
    loss = total_loss(d, p, omega, config)
    rnd = Round(d, p, omega, loss, _gradient(loss, state), state.replans, "accept")
    content = terminal_content("accept", message.outcomes)
    summary = accept_summary(message.summary, given.run_outcomes, message.outcomes)
    result = final_result(
        state,
        message.task_id,
        rnd,
        (summary, message.merged_output, terminal_rationale(rnd, config)),
    )
    return StepResult(
        output=result,
        state=state_after(state, rnd, state.tried_targets),
        megrams=[_terminal_megram(message.task_id, "accept", content, given)],
    )


def _replan(
    state: GGSState,
    message: ReplanRequest,
    elapsed: float,
    config: GGSConfig,
    given: _Given,
) -> StepResult:
    rnd = _decide(state, message, elapsed, config)
    failing = calls_of(o for o in message.outcomes if o.status == "failed")
    repeated = repeated_targets(failing, state.last_calls)
    latest = dedupe([*failed_targets(failing), *repeated])
    tried = dedupe([*state.tried_targets, *latest])
    next_state = state_after(state, rnd, tried, [call_key(c) for _, c in failing])
    if rnd.directive in TERMINAL:
        return _terminal(state, message, rnd, config, given, next_state)
    directive = PlanDirective(
        task_id=message.task_id,
        loss=rnd.loss,
        prev_directive=state.prev_directive,
        directive=rnd.directive,
        blocked_tools=blocked_tools(rnd, failing, config),
        blocked_targets=blocked_targets(rnd, latest, tried, config),
        failed_criterion=failed_criterion(
            message.outcomes, message.task_criteria_verdicts
        ),
        failure_class=failure_class(rnd.p, config),
        budget_pressure=rnd.omega,
        grad_l=rnd.grad,
        rationale=action_rationale(rnd, config, message.gap_summary),
    )
    # Only a call whose own result failed says something about its (tool,
    # target): reading a file that a failing subtask then miscounted did not.
    megrams = action_megrams(
        rnd.directive,
        [(o, c) for o, c in failing if is_failed_result(c)],
        now=given.now,
        id_factory=given.id_factory,
    )
    return StepResult(output=directive, state=next_state, megrams=megrams)


def _decide(
    state: GGSState, message: ReplanRequest, elapsed: float, config: GGSConfig
) -> Round:
    replans = state.replans + 1  # Ω counts the round being decided
    outcomes, verdicts = message.outcomes, message.task_criteria_verdicts
    d = distance(outcomes, verdicts, rejected=True)
    p = implausibility(outcomes, verdicts)
    omega = resource_cost(replans, elapsed, config)
    loss = total_loss(d, p, omega, config)
    grad = _gradient(loss, state)
    worsening = state.worsening_count + 1 if grad >= config.epsilon else 0
    directive = select_directive(grad, d, p, omega, config)
    if directive == "success" and (
        merge_rejected(outcomes, verdicts) or hard_failure(outcomes)
    ):
        # A rejected merge or a failed fact is acted on as a wide gap, never
        # delivered as success.
        directive = select_directive(grad, 1.0, p, omega, config)
    cause = "budget" if directive == "abandon" else ""
    if directive not in TERMINAL:
        if worsening >= config.law2_kill:
            directive, cause = "abandon", "law2"
        elif message.recommendation == "abandon":
            directive, cause = "abandon", "recommendation"
    return Round(d, p, omega, loss, grad, replans, directive, cause, worsening)


def _terminal(
    state: GGSState,
    message: ReplanRequest,
    rnd: Round,
    config: GGSConfig,
    given: _Given,
    next_state: GGSState,
) -> StepResult:
    gap = message.gap_summary
    summary, output = terminal_report(rnd, given.run_outcomes, gap, config)
    rationale = terminal_rationale(rnd, config, gap)
    result = final_result(state, message.task_id, rnd, (summary, output, rationale))
    reason = abandon_reason(rnd, given.run_outcomes, gap)
    result = result.model_copy(update={"reason": reason})
    content = terminal_content(rnd.directive, message.outcomes, gap)
    megram = _terminal_megram(message.task_id, rnd.directive, content, given)
    if rnd.directive == "abandon" and infrastructure_only(message.outcomes):
        return StepResult(output=result, state=next_state, megrams=[])
    return StepResult(output=result, state=next_state, megrams=[megram])


def _terminal_megram(task_id: str, state: str, content: str, given: _Given) -> Megram:
    return make_megram(
        f"intent:{task_id}",
        "env:local",
        content,
        state,
        now=given.now,
        id_factory=given.id_factory,
    )
