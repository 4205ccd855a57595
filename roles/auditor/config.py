"""The Auditor's detection thresholds."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class AuditConfig:
    """Detection thresholds; the defaults are the reference's and the design's.

    ``role_drift_min_outcomes`` applies to both the window and the baseline, so a
    role needs that many outcome messages in each before its rates are compared;
    ``role_drift_min_failures`` keeps one or two failures from raising an alarm.
    """

    drift_corrections: int = 5
    grad_l_threshold: float = 0.1
    thrash_rounds: int = 2
    fanin_deadline_s: float = 300.0
    role_drift_factor: int = 2
    role_drift_min_outcomes: int = 5
    role_drift_min_failures: int = 3
    max_listed: int = 100

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"AuditConfig.{field.name} must be > 0, not {value!r}")
