"""What GGS says about a round: MUST NOT sets and rationale.

The decision itself is in ``roles.ggs``; this module turns a decided ``Round`` into
the fields of a PlanDirective or FinalResult (its summary and output are in
``roles.ggs_summary``).

Blocked targets are the inputs that failed. The spec (v0.8, Dynamic MUST NOT
Injection) gives ``blocked_targets`` the "specific *inputs* that failed", and
lists them as "failed query strings / commands / paths"; a subtask fails as a
whole, but its calls do not. So a target is blocked only when its own call
failed, as the canonical evidence entry shows it (``is_failed_result``): a
non-zero ``[exit code N]``, or, for a call without an exit code, an ``ERROR:``,
a ``[LAW1]`` refusal or another failure marker of ``roles.evidence``. The
``ls`` that found the directory before the ``cat`` that failed stays usable in
the next round; blocking it would forbid the step that worked and teach R2
nothing about the one that did not. Only calls of failing subtasks count: a
matched subtask's detours were corrected in its own fast loop (R4a). Failed
targets accumulate across rounds (``GGSState.tried_targets``), and the ∇L urgency
rules choose between all of them and this round's. A command that ran a file its
own subtask wrote is not blocked: the file failed, not the command.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from roles.contracts import CriterionVerdict, Loss, SubTaskOutcome
from roles.evidence import (
    ToolCall,
    first_target,
    is_failed_call,
    parse_evidence,
    split_exit_code,
)
from roles.loss import GGSConfig
from roles.toolclass import tool_classes
from roles.wording import plain

FailingCall = tuple[SubTaskOutcome, ToolCall]


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


def blocked_tools(
    rnd: Round, failing: list[FailingCall], config: GGSConfig
) -> list[str]:
    """Return the tools R2 must not use next round (logical directives only).

    break_symmetry, and change_approach while the loss worsens, block every tool of
    the failing subtasks; change_approach while the loss improves blocks only the
    tools whose calls failed (a subtask's last call when none reported an error).
    A shell call blocks the programs it ran, not the shell (``roles.toolclass``).
    """
    if rnd.directive == "break_symmetry" or (
        rnd.directive == "change_approach" and rnd.is_worsening(config)
    ):
        return dedupe(_classes(call for _, call in failing))
    if rnd.directive != "change_approach":
        return []
    by_outcome: dict[str, list[ToolCall]] = {}
    for outcome, call in failing:
        by_outcome.setdefault(outcome.subtask_id, []).append(call)
    tools = []
    for calls in by_outcome.values():
        tools += _classes([c for c in calls if is_failed_result(c)] or [calls[-1]])
    return dedupe(tools)


def _classes(calls: Iterable[ToolCall]) -> list[str]:
    return [name for call in calls for name in tool_classes(call.tool, call.args)]


def is_failed_result(call: ToolCall) -> bool:
    """Return True when the call's own result failed.

    A shell result's ``[exit code N]`` line decides: non-zero failed, zero did
    not, whatever words the output holds. A call without one failed when its
    output is an error, a refusal or a Law 1 denial.
    """
    code, _ = split_exit_code(call.output)
    if code is not None:
        return code != 0
    return is_failed_call(call)


def failed_targets(failing: list[FailingCall]) -> list[str]:
    """Return the targets of the failing subtasks' calls that failed, once each.

    A shell command that ran a file its own subtask wrote (``python hello.py``
    after writing hello.py) failed because of what was written: blocking the
    command would forbid the one step that checks the next version of the file.
    """
    written = {id(outcome): _written_paths(outcome) for outcome, _ in failing}
    return dedupe(
        first_target(call.args)
        for outcome, call in failing
        if is_failed_result(call) and not _runs_written(call, written[id(outcome)])
    )


# "> path", ">> path" or "tee path" in a shell command: the file it writes.
_REDIRECT = re.compile(r"(?:>>?|\btee(?:\s+-a)?)\s*['\"]?([^\s'\";&|]+)")


def _written_paths(outcome: SubTaskOutcome) -> set[str]:
    paths: set[str] = set()
    for entry in outcome.tool_calls:
        call = parse_evidence(entry)
        if call is None:
            continue
        path, command = call.args.get("path"), call.args.get("command")
        if call.tool == "write_file" and isinstance(path, str) and path.strip():
            paths.add(path.strip())
        elif call.tool == "shell" and isinstance(command, str):
            paths.update(_REDIRECT.findall(command))
    return {p for p in paths if p not in ("/dev/null", "&1", "&2")}


def _runs_written(call: ToolCall, written: set[str]) -> bool:
    command = call.args.get("command")
    if call.tool != "shell" or not isinstance(command, str):
        return False
    return any(path in command and not _writes(command, path) for path in written)


def _writes(command: str, path: str) -> bool:
    return path in _REDIRECT.findall(command)


def blocked_targets(
    rnd: Round, latest: list[str], tried: list[str], config: GGSConfig
) -> list[str]:
    """Return the targets R2 must not reuse (environmental directives only).

    ``latest`` are this round's failed targets, ``tried`` the run's so far.
    change_path, and refine while the loss worsens, block every failed target of
    the run; refine while the loss improves blocks only this round's.
    """
    if rnd.directive == "change_path" or (
        rnd.directive == "refine" and rnd.is_worsening(config)
    ):
        return list(tried)
    return list(latest) if rnd.directive == "refine" else []


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
