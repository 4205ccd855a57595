"""R6 Auditor: a read-only tap on the bus that reports to the human operator.

``Auditor.observe`` turns each bus envelope, in bus order, into the AuditEvent
that records it, flagging at most one anomaly per event (the last one found, as
in the reference; the detail names every one found). ``tick`` finds rounds whose
fan-in is overdue. ``report`` closes the window. The Auditor sends nothing: its
caller stores the events and delivers the reports to the operator.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from roles.auditor.checks import Finding, apply_rules
from roles.auditor.config import AuditConfig
from roles.auditor.envelope import (
    Envelope,
    boundary_detail,
    parse_envelope,
    parse_time,
)
from roles.auditor.state import TRENDS, AuditState, Manifest, Window
from roles.contracts import (
    AuditEvent,
    AuditReport,
    ConvergenceHealth,
    Period,
    RoleHealth,
    ToolHealth,
)

STATE_VERSION = 1


def _uuid() -> str:
    return uuid.uuid4().hex


class Auditor:
    """Observe bus envelopes, flag anomalies, and keep the window statistics."""

    def __init__(
        self,
        config: AuditConfig | None = None,
        *,
        started_at: datetime | None = None,
        id_factory: Callable[[], str] = _uuid,
    ) -> None:
        """Start a window at ``started_at`` (or at the first envelope seen)."""
        self.config = config or AuditConfig()
        self.ids = id_factory
        self.state = AuditState(Window(started_at=started_at))

    @property
    def window(self) -> Window:
        """Return the current report window."""
        return self.state.window

    def observe(self, envelope: dict[str, Any]) -> AuditEvent:
        """Return the AuditEvent recording one bus envelope."""
        env = parse_envelope(envelope)
        if self.window.started_at is None:
            self.window.started_at = env.created_at
        if env.run:
            self.window.runs.add(env.run)
        self.window.role_messages[env.sender] += 1
        findings: list[Finding] = []
        if detail := boundary_detail(env):
            findings.append(("boundary_violation", detail))
        findings.extend(apply_rules(self.state, self.config, env))
        if env.type == "FinalResult" and boundary_detail(env) is None:
            self._forget_run(env.run or "")
        for kind, detail in findings:
            self._record(kind, detail)
        return self._event(env, findings)

    def tick(self, now: datetime) -> list[AuditEvent]:
        """Return a fanin_incomplete event for each round overdue at ``now``."""
        now = parse_time(now)
        events = []
        for run_key, state in self.state.runs.items():
            for manifest in list(state.manifests):
                missing = [s for s in manifest.subtask_ids if s not in state.outcomes]
                age = (now - manifest.at).total_seconds()
                if missing and age <= self.config.fanin_deadline_s:
                    continue
                state.manifests.remove(manifest)
                if missing:
                    events.append(self._fanin_event(run_key, manifest, missing, now))
        return events

    def report(
        self,
        now: datetime,
        *,
        trigger: str = "periodic",
        in_reply_to: int | None = None,
    ) -> AuditReport:
        """Return the report of the current window and start a new one at ``now``."""
        now = parse_time(now)
        w = self.window
        anomalies = list(w.anomalies)
        if w.omitted:
            anomalies.append(f"{w.omitted} more report entries not listed")
        runs = len(w.runs)
        report = AuditReport(
            report_id=self.ids(),
            trigger=trigger,
            period=Period(from_=w.started_at or now, to=now),
            tasks_observed=runs,
            boundary_violations=list(w.boundary_violations),
            convergence_health=ConvergenceHealth(
                avg_correction_count=w.corrections / runs if runs else 0.0,
                gap_trend_distribution={t: w.gap_trends[t] for t in TRENDS},
            ),
            drift_alerts=list(w.drift_alerts),
            anomalies=anomalies,
            tool_health=ToolHealth(
                execution_failures=w.execution_failures,
                environmental_retries=w.environmental_retries,
                logical_retries=w.logical_retries,
            ),
            role_health=self._role_health(),
            in_reply_to=in_reply_to,
        )
        self.start_window(now)
        return report

    def start_window(self, now: datetime) -> None:
        """Fold the window's role rates into the baseline and open a new window."""
        self.state.history_outcomes.update(self.window.role_outcomes)
        self.state.history_failures.update(self.window.role_failures)
        self.state.window = Window(started_at=parse_time(now))

    def is_idle(self) -> bool:
        """Return True when the window has nothing worth reporting."""
        return self.window.is_idle()

    def snapshot(self) -> dict[str, Any]:
        """Return the whole state as JSON data, for ``restore``."""
        return {"version": STATE_VERSION, **self.state.to_json()}

    @classmethod
    def restore(
        cls,
        state: dict[str, Any],
        config: AuditConfig | None = None,
        *,
        id_factory: Callable[[], str] = _uuid,
    ) -> Auditor:
        """Return an Auditor resumed from a ``snapshot``."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unknown auditor state version {state.get('version')!r}")
        auditor = cls(config, id_factory=id_factory)
        auditor.state = AuditState.from_json(state)
        return auditor

    def _forget_run(self, run_key: str) -> None:
        state = self.state.runs.pop(run_key, None)
        if state is not None:
            for sid in state.subtask_ids:
                self.state.subtasks.pop(sid, None)

    def _record(self, kind: str, detail: str) -> None:
        w, cap = self.window, self.config.max_listed
        if kind == "boundary_violation":
            w.note(w.boundary_violations, detail, cap)
        if kind in ("drift", "role_drift"):
            w.note(w.drift_alerts, detail, cap)
        w.note(w.anomalies, f"{kind}: {detail}", cap)

    def _event(self, env: Envelope, findings: list[Finding]) -> AuditEvent:
        detail = None
        if len(findings) == 1:
            detail = findings[0][1]
        elif findings:
            detail = "; ".join(f"{kind}: {text}" for kind, text in findings)
        return AuditEvent(
            event_id=self.ids(),
            timestamp=env.created_at,
            run_id=env.run or "",
            message_id=env.id,
            from_role=env.sender,
            to_role=env.recipient,
            message_type=env.type,
            anomaly=findings[-1][0] if findings else "none",
            detail=detail,
        )

    def _fanin_event(
        self, run_key: str, manifest: Manifest, missing: list[str], now: datetime
    ) -> AuditEvent:
        total = len(manifest.subtask_ids)
        detail = (
            f"run {run_key or '-'} round {manifest.round}: "
            f"{total - len(missing)} of {total} outcomes "
            f"{(now - manifest.at).total_seconds():.0f} s after DispatchManifest "
            f"#{manifest.message_id} (deadline {self.config.fanin_deadline_s:g} s); "
            f"missing {', '.join(missing)}"
        )
        self._record("fanin_incomplete", detail)
        return AuditEvent(
            event_id=self.ids(),
            timestamp=now,
            run_id=run_key,
            message_id=manifest.message_id,
            from_role="R2",
            to_role="R4b",
            message_type="DispatchManifest",
            anomaly="fanin_incomplete",
            detail=detail,
        )

    def _role_health(self) -> dict[str, RoleHealth]:
        w = self.window
        roles = sorted(set(w.role_messages) | set(w.role_outcomes))
        return {
            role: RoleHealth(
                messages=w.role_messages[role],
                outcomes=w.role_outcomes[role],
                failures=w.role_failures[role],
                error_rate=(
                    w.role_failures[role] / w.role_outcomes[role]
                    if w.role_outcomes[role]
                    else 0.0
                ),
            )
            for role in roles
        }
