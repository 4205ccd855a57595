"""The Auditor's detection rules, one per message type, and role drift.

Each rule is given the Auditor's state and thresholds explicitly; it reads one
envelope, updates the window and per-run state, and returns its findings as
(anomaly, detail) pairs.
"""

from __future__ import annotations

from collections.abc import Callable

from roles.auditor.config import AuditConfig
from roles.auditor.envelope import Envelope, number
from roles.auditor.state import AuditState, Manifest, RunState

Finding = tuple[str, str]


def apply_rules(state: AuditState, config: AuditConfig, env: Envelope) -> list[Finding]:
    """Return the findings of the type's rule and of the role drift check."""
    rule = RULES.get(env.type)
    findings = rule(state, config, env) if rule is not None else []
    return findings + _role_drift(state, config, env)


def gap_trend(grad_l: float, threshold: float) -> str:
    """Return ``improving``, ``worsening`` or ``stable`` for a loss gradient."""
    if grad_l < -threshold:
        return "improving"
    if grad_l > threshold:
        return "worsening"
    return "stable"


def role_outcome(env: Envelope) -> tuple[str, bool] | None:
    """Return (role, failed) when the message is one of a role's outcomes.

    A role's outcomes and failures, the basis of role drift:

    - R1: TaskSpec, ClarificationRequest or DirectResponse; failure = asking for
      clarification.
    - R2: DispatchManifest; failure = a manifest with no subtasks (no plan).
    - R3: ExecutionResult; failure = status ``failed``.
    - R4a: SubTaskOutcome; failure = status ``failed``.
    - R4b: OutcomeSummary or ReplanRequest; failure = a ReplanRequest.
    - R5: MemoryRecall; failure = memory unavailable.
    - R7: FinalResult; failure = directive ``abandon``.
    """
    payload = env.payload
    match env.type:
        case "TaskSpec" | "ClarificationRequest" | "DirectResponse":
            return "R1", env.type == "ClarificationRequest"
        case "DispatchManifest":
            return "R2", not payload.get("subtask_ids")
        case "ExecutionResult":
            return "R3", payload.get("status") == "failed"
        case "SubTaskOutcome":
            return "R4a", payload.get("status") == "failed"
        case "OutcomeSummary" | "ReplanRequest":
            return "R4b", env.type == "ReplanRequest"
        case "MemoryRecall":
            return "R5", payload.get("available") is False
        case "FinalResult":
            return "R7", payload.get("directive") == "abandon"
    return None


def _run(state: AuditState, env: Envelope) -> RunState:
    return state.runs.setdefault(env.run or "", RunState())


def _dispatch_manifest(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    ids = [str(s) for s in env.payload.get("subtask_ids") or []]
    if ids:
        _run(state, env).manifests.append(
            Manifest(env.id, env.round, env.created_at, ids)
        )
    return []


def _subtask(state: AuditState, config: AuditConfig, env: Envelope) -> list[Finding]:
    sid = str(env.payload.get("subtask_id") or "")
    if not sid:
        return []
    first = state.subtasks.get(sid)
    if first is not None:
        run, message_id = first
        detail = (
            f"subtask {sid} dispatched again in message #{env.id} "
            f"(first in message #{message_id} of run {run or '-'})"
        )
        return [("duplicate_subtask_id", detail)]
    state.subtasks[sid] = (env.run or "", env.id)
    _run(state, env).subtask_ids.add(sid)
    return []


def _subtask_outcome(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    if sid := env.payload.get("subtask_id"):
        _run(state, env).outcomes.add(str(sid))
    return []


def _execution_result(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    if env.payload.get("status") == "failed":
        state.window.execution_failures += 1
    return []


def _correction_signal(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    state.window.corrections += 1
    failure_class = env.payload.get("failure_class")
    if failure_class == "environmental":
        state.window.environmental_retries += 1
    elif failure_class == "logical":
        state.window.logical_retries += 1
    return []


def _replan_request(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    run = _run(state, env)
    run.replans += 1
    count = number(env.payload, "correction_count") or 0
    if count < config.drift_corrections:
        return []
    detail = (
        f"run {env.run_label} task {env.payload.get('task_id', '?')} "
        f"correction_count={count:g} (threshold {config.drift_corrections}) "
        f"replan #{run.replans}"
    )
    return [("drift", detail)]


def _plan_directive(
    state: AuditState, config: AuditConfig, env: Envelope
) -> list[Finding]:
    findings: list[Finding] = []
    grad_l = number(env.payload, "grad_l")
    task = env.payload.get("task_id", "?")
    loss = env.payload.get("loss") if isinstance(env.payload.get("loss"), dict) else {}
    directive = env.payload.get("directive")
    if grad_l is not None:
        threshold = config.grad_l_threshold
        state.window.gap_trends[gap_trend(grad_l, threshold)] += 1
        if grad_l > threshold:
            big_l = number(loss, "L") or 0.0
            findings.append(
                (
                    "convergence_failure",
                    f"run {env.run_label} task {task} ∇L={grad_l:.3f} (worsening) "
                    f"directive={directive} L={big_l:.3f}",
                )
            )
    run = _run(state, env)
    if directive != "break_symmetry":
        run.break_d, run.break_count = None, 0
        return findings
    d = number(loss, "D")
    if d is None:
        return findings
    not_decreasing = run.break_d is not None and d >= run.break_d - 1e-9
    run.break_count = run.break_count + 1 if not_decreasing else 1
    run.break_d = d
    if run.break_count >= config.thrash_rounds:
        findings.append(
            (
                "ggs_thrashing",
                f"run {env.run_label} task {task}: {run.break_count} consecutive "
                f"break_symmetry without D decreasing (D={d:.3f})",
            )
        )
    return findings


RULES: dict[str, Callable[[AuditState, AuditConfig, Envelope], list[Finding]]] = {
    "DispatchManifest": _dispatch_manifest,
    "SubTask": _subtask,
    "SubTaskOutcome": _subtask_outcome,
    "ExecutionResult": _execution_result,
    "CorrectionSignal": _correction_signal,
    "ReplanRequest": _replan_request,
    "PlanDirective": _plan_directive,
}


def _role_drift(state: AuditState, config: AuditConfig, env: Envelope) -> list[Finding]:
    outcome = role_outcome(env)
    if outcome is None:
        return []
    role, failed = outcome
    w, cfg = state.window, config
    w.role_outcomes[role] += 1
    if not failed:
        return []
    w.role_failures[role] += 1
    n, f = w.role_outcomes[role], w.role_failures[role]
    hn, hf = state.history_outcomes[role], state.history_failures[role]
    if (
        role in w.role_drift_flagged
        or n < cfg.role_drift_min_outcomes
        or f < cfg.role_drift_min_failures
        or hn < cfg.role_drift_min_outcomes
        # f/n > factor × hf/hn, in integers so "exactly twice" is not drift.
        or f * hn <= cfg.role_drift_factor * hf * n
    ):
        return []
    w.role_drift_flagged.add(role)
    detail = (
        f"{role} failure rate {f}/{n} ({f / n:.0%}) is more than "
        f"{cfg.role_drift_factor}× its earlier rate {hf}/{hn} ({hf / hn:.0%})"
    )
    return [("role_drift", detail)]
