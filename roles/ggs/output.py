"""What GGS says about a round: its numbers, failure class and rationale.

The decision itself is in ``roles.ggs.solver``; this module turns a decided
``Round`` into the fields of a PlanDirective or FinalResult (its summary and output are
in
``roles.ggs.summary``, the MUST NOT sets of tools and targets in
``roles.ggs.blocks``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from roles.contracts import CriterionVerdict, Loss, SubTaskOutcome
from roles.ggs.loss import GGSConfig
from roles.wording import plain


@dataclass(frozen=True)
class Round:
    """The numbers and the decision of one GGS round."""

    d: float
    p: float
    omega: float
    l: float  # noqa: E741 - the spec's name for the loss
    grad: float
    replans: int
    directive: str
    cause: str = ""
    worsening_count: int = 0

    @property
    def loss(self) -> Loss:
        """Return the loss breakdown for the contracts."""
        return Loss(D=self.d, P=self.p, Omega=self.omega, L=self.l)

    def is_worsening(self, config: GGSConfig) -> bool:
        """Return True when the loss rose by at least ε this round."""
        return self.grad >= config.epsilon


def failure_class(p: float, config: GGSConfig) -> str:
    """Return logical above ρ, environmental below it, mixed on it."""
    if p > config.rho:
        return "logical"
    return "environmental" if p < config.rho else "mixed"


def failed_criterion(
    outcomes: list[SubTaskOutcome], task_verdicts: list[CriterionVerdict]
) -> str:
    """Return the criterion that drives D: the first one left unmet."""
    for outcome in outcomes:
        last = outcome.gap_trajectory[-1:] if outcome.status == "failed" else []
        if last and last[0].unmet_criteria:
            return last[0].unmet_criteria[0]
    verdicts = [v for o in outcomes for v in o.criteria_verdicts] + task_verdicts
    return next((v.criterion for v in verdicts if v.verdict == "fail"), "")


def action_rationale(rnd: Round, config: GGSConfig, gap: str) -> str:
    """Return why an action directive was chosen, with its numbers."""
    g, p, d = rnd.grad, rnd.p, rnd.d
    worse = rnd.is_worsening(config)
    eps, rho, delta = config.epsilon, config.rho, config.delta
    text = {
        "break_symmetry": f"Local minimum (|∇L|={abs(g):.3f} < ε={eps}, D={d:.2f} > "
        f"δ={delta}), logical failure (P={p:.2f} > ρ={rho}). Block all tried "
        "tools, demand novel approach.",
        "change_path": f"Plateau (|∇L|={abs(g):.3f} < ε={eps}, D={d:.2f} > "
        f"δ={delta}), environmental origin (P={p:.2f} ≤ ρ={rho}). Same tool class, "
        "different target; all failed targets blocked.",
        "change_approach": f"Loss {'worsening' if worse else 'improving'} "
        f"(∇L={g:+.3f}, |∇L| ≥ ε={eps}) with logical failure (P={p:.2f} > ρ={rho}). "
        + (
            "Switch tool class entirely; every tool of the failing subtasks blocked."
            if worse
            else "Distrust the trend and switch method; failing tools blocked."
        ),
        "refine": f"Loss {'worsening' if worse else 'decreasing'} (∇L={g:+.3f}, "
        f"|∇L| ≥ ε={eps}), approach is sound (P={p:.2f} ≤ ρ={rho}). "
        + (
            "Adjust path/parameters; all failed targets blocked."
            if worse
            else "Tighten parameters; the latest failed targets blocked."
        ),
    }[rnd.directive]
    return _with_numbers(text, rnd, gap)


def terminal_rationale(rnd: Round, config: GGSConfig, gap: str = "") -> str:
    """Return why the run ends here, with its numbers."""
    if rnd.directive == "accept":
        text = "All subtasks matched and the merged result was verified."
    elif rnd.directive == "success":
        text = f"Converged: D={rnd.d:.2f} ≤ δ={config.delta}, Ω < θ={config.theta}."
    else:
        cause = abandon_cause(rnd, config)
        text = f"{cause[0].upper()}{cause[1:]}."
    return _with_numbers(text, rnd, gap)


def abandon_cause(rnd: Round, config: GGSConfig) -> str:
    """Return the reason an abandon happened, in a few words with numbers."""
    if rnd.cause == "law2":
        return (
            f"loss worsened {rnd.worsening_count} rounds in a row "
            f"(∇L={rnd.grad:+.3f} ≥ ε={config.epsilon}, Law 2)"
        )
    if rnd.cause == "recommendation":
        return (
            f"the checks still failed after {_plans(rnd.replans)} and the "
            "result checker advised stopping"
        )
    if rnd.cause == "single":
        return "the one round the control strategy allows did not pass its checks"
    if rnd.cause == "rounds":
        return f"no rounds left (at most {_plans(config.max_replans)})"
    return f"budget exhausted (Ω={rnd.omega:.2f} ≥ θ={config.theta})"


def stop_reason(rnd: Round, gap: str = "") -> str:
    """Return why an abandoned run stopped, in the user's words (no loss terms).

    ``gap`` is what was still missing; give it when no step failed, as the
    failed steps' own reasons say it otherwise.
    """
    if rnd.cause == "law2":
        text = (
            f"The last {rnd.worsening_count} attempts each came out worse than "
            "the one before, so it stopped rather than keep going."
        )
    elif rnd.cause == "recommendation":
        text = (
            f"The checks still failed after {_plans(rnd.replans)}, and another "
            "plan was judged unlikely to help."
        )
    elif rnd.cause == "single":
        text = (
            "It was set to run one round only, with no second plan, and that "
            "round did not pass its checks."
        )
    elif rnd.cause == "rounds":
        text = (
            f"It used up its rounds ({_plans(rnd.replans - 1)}) before the "
            "checks passed."
        )
    elif rnd.replans:
        text = (
            f"It used up its budget of time and attempts ({_plans(rnd.replans)}) "
            "before the checks passed."
        )
    else:
        text = "It used up its time budget before the checks passed."
    return f"{text} Still missing: {plain(gap)}" if gap else text


def _plans(count: int) -> str:
    return "1 new plan" if count == 1 else f"{count} new plans"


def dedupe(values: Iterable[str]) -> list[str]:
    """Return the non-empty values once each, in first-seen order."""
    return list(dict.fromkeys(v for v in values if v))


def _with_numbers(text: str, rnd: Round, gap: str) -> str:
    numbers = (
        f"[D={rnd.d:.2f} P={rnd.p:.2f} Ω={rnd.omega:.2f} L={rnd.l:.3f} "
        f"∇L={rnd.grad:+.3f}]"
    )
    return f"{text} {numbers}" + (f" Gap: {gap}" if gap else "")
