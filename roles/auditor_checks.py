"""The Auditor's detection rules, one per message type, and role drift.

``AuditRules`` is mixed into ``roles.auditor.Auditor``; each rule reads one
envelope, updates the window and per-run state, and returns its findings as
(anomaly, detail) pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from roles.auditor_rules import AuditConfig, Envelope, gap_trend, number, role_outcome
from roles.auditor_state import Manifest, RunState, Window

Finding = tuple[str, str]


class AuditRules:
    """Apply the per-type detection rules to the state of an Auditor."""

    config: AuditConfig
    window: Window
    runs: dict[str, RunState]
    subtasks: dict[str, tuple[str, int]]
    history_outcomes: Counter[str]
    history_failures: Counter[str]

    def apply_rules(self, env: Envelope) -> list[Finding]:
        """Return the findings of the type's rule and of the role drift check."""
        rule = self._rules.get(env.type)
        findings = rule(self, env) if rule is not None else []
        return findings + self._role_drift(env)

    def _run(self, env: Envelope) -> RunState:
        return self.runs.setdefault(env.run or "", RunState())

    def _dispatch_manifest(self, env: Envelope) -> list[Finding]:
        ids = [str(s) for s in env.payload.get("subtask_ids") or []]
        if ids:
            self._run(env).manifests.append(
                Manifest(env.id, env.round, env.created_at, ids)
            )
        return []

    def _subtask(self, env: Envelope) -> list[Finding]:
        sid = str(env.payload.get("subtask_id") or "")
        if not sid:
            return []
        first = self.subtasks.get(sid)
        if first is not None:
            run, message_id = first
            detail = (
                f"subtask {sid} dispatched again in message #{env.id} "
                f"(first in message #{message_id} of run {run or '-'})"
            )
            return [("duplicate_subtask_id", detail)]
        self.subtasks[sid] = (env.run or "", env.id)
        self._run(env).subtask_ids.add(sid)
        return []

    def _subtask_outcome(self, env: Envelope) -> list[Finding]:
        if sid := env.payload.get("subtask_id"):
            self._run(env).outcomes.add(str(sid))
        return []

    def _execution_result(self, env: Envelope) -> list[Finding]:
        if env.payload.get("status") == "failed":
            self.window.execution_failures += 1
        return []

    def _correction_signal(self, env: Envelope) -> list[Finding]:
        self.window.corrections += 1
        failure_class = env.payload.get("failure_class")
        if failure_class == "environmental":
            self.window.environmental_retries += 1
        elif failure_class == "logical":
            self.window.logical_retries += 1
        return []

    def _replan_request(self, env: Envelope) -> list[Finding]:
        state = self._run(env)
        state.replans += 1
        count = number(env.payload, "correction_count") or 0
        if count < self.config.drift_corrections:
            return []
        detail = (
            f"run {env.run_label} task {env.payload.get('task_id', '?')} "
            f"correction_count={count:g} (threshold {self.config.drift_corrections}) "
            f"replan #{state.replans}"
        )
        return [("drift", detail)]

    def _plan_directive(self, env: Envelope) -> list[Finding]:
        findings: list[Finding] = []
        grad_l = number(env.payload, "grad_l")
        task = env.payload.get("task_id", "?")
        loss = (
            env.payload.get("loss") if isinstance(env.payload.get("loss"), dict) else {}
        )
        directive = env.payload.get("directive")
        if grad_l is not None:
            threshold = self.config.grad_l_threshold
            self.window.gap_trends[gap_trend(grad_l, threshold)] += 1
            if grad_l > threshold:
                big_l = number(loss, "L") or 0.0
                findings.append(
                    (
                        "convergence_failure",
                        f"run {env.run_label} task {task} ∇L={grad_l:.3f} (worsening) "
                        f"directive={directive} L={big_l:.3f}",
                    )
                )
        state = self._run(env)
        if directive != "break_symmetry":
            state.break_d, state.break_count = None, 0
            return findings
        d = number(loss, "D")
        if d is None:
            return findings
        not_decreasing = state.break_d is not None and d >= state.break_d - 1e-9
        state.break_count = state.break_count + 1 if not_decreasing else 1
        state.break_d = d
        if state.break_count >= self.config.thrash_rounds:
            findings.append(
                (
                    "ggs_thrashing",
                    f"run {env.run_label} task {task}: {state.break_count} consecutive "
                    f"break_symmetry without D decreasing (D={d:.3f})",
                )
            )
        return findings

    _rules: dict[str, Callable[[AuditRules, Envelope], list[Finding]]] = {
        "DispatchManifest": _dispatch_manifest,
        "SubTask": _subtask,
        "SubTaskOutcome": _subtask_outcome,
        "ExecutionResult": _execution_result,
        "CorrectionSignal": _correction_signal,
        "ReplanRequest": _replan_request,
        "PlanDirective": _plan_directive,
    }

    def _role_drift(self, env: Envelope) -> list[Finding]:
        outcome = role_outcome(env)
        if outcome is None:
            return []
        role, failed = outcome
        w, cfg = self.window, self.config
        w.role_outcomes[role] += 1
        if not failed:
            return []
        w.role_failures[role] += 1
        n, f = w.role_outcomes[role], w.role_failures[role]
        hn, hf = self.history_outcomes[role], self.history_failures[role]
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
