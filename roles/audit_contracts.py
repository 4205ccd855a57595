"""The Auditor's messages: one event per bus message and the window report."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from roles.contract_base import Anomaly, Contract, NonEmpty


class AuditEvent(Contract):
    """The Auditor's record of one bus message."""

    event_id: str = ""
    timestamp: datetime | None = None
    run_id: str = ""
    message_id: int | None = None
    from_role: NonEmpty
    to_role: NonEmpty
    message_type: NonEmpty
    anomaly: Anomaly = "none"
    detail: str | None = None


class Period(Contract):
    """The window an AuditReport covers (JSON keys ``from`` and ``to``)."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, serialize_by_alias=True
    )

    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None


class ConvergenceHealth(Contract):
    """Aggregate convergence figures of an audit window."""

    avg_correction_count: float = Field(default=0.0, ge=0.0)
    gap_trend_distribution: dict[str, int] = Field(default_factory=dict)


class ToolHealth(Contract):
    """Tool failure counters of an audit window."""

    execution_failures: int = Field(default=0, ge=0)
    environmental_retries: int = Field(default=0, ge=0)
    logical_retries: int = Field(default=0, ge=0)


class RoleHealth(Contract):
    """One role's message count and failure rate in an audit window."""

    messages: int = Field(default=0, ge=0)
    outcomes: int = Field(default=0, ge=0)
    failures: int = Field(default=0, ge=0)
    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)


class AuditReport(Contract):
    """The Auditor's window report to the human operator."""

    report_id: str = ""
    trigger: Literal["periodic", "on_demand"] = "periodic"
    period: Period = Field(default_factory=Period)
    tasks_observed: int = Field(default=0, ge=0)
    boundary_violations: list[str] = Field(default_factory=list)
    convergence_health: ConvergenceHealth = Field(default_factory=ConvergenceHealth)
    drift_alerts: list[str] = Field(default_factory=list)
    anomalies: list[str] = Field(default_factory=list)
    tool_health: ToolHealth = Field(default_factory=ToolHealth)
    role_health: dict[str, RoleHealth] = Field(default_factory=dict)
    in_reply_to: int | None = None


class AuditQuery(Contract):
    """An operator's request for an on-demand audit report (no payload)."""
