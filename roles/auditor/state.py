"""The Auditor's state: the report window, per-run trackers, and their JSON form.

``AuditState`` holds all of it; the detection rules (``roles.auditor.checks``)
are given it explicitly. The whole state round-trips through
``to_json``/``from_json`` so the Auditor process can persist it with its cursor
and resume after a restart without counting anything twice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TRENDS = ("improving", "stable", "worsening")


@dataclass
class Manifest:
    """A dispatched round waiting for its fan-in."""

    message_id: int
    round: int
    at: datetime
    subtask_ids: list[str]


@dataclass
class RunState:
    """Per-run counters, dropped when the run's FinalResult is seen."""

    replans: int = 0
    break_d: float | None = None
    break_count: int = 0
    subtask_ids: set[str] = field(default_factory=set)
    outcomes: set[str] = field(default_factory=set)
    manifests: list[Manifest] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return the run's counters as JSON data."""
        return {
            "replans": self.replans,
            "break_d": self.break_d,
            "break_count": self.break_count,
            "subtask_ids": sorted(self.subtask_ids),
            "outcomes": sorted(self.outcomes),
            "manifests": [
                {
                    "message_id": m.message_id,
                    "round": m.round,
                    "at": m.at.isoformat(),
                    "subtask_ids": m.subtask_ids,
                }
                for m in self.manifests
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        """Return the run's counters from their JSON form."""
        return cls(
            replans=data["replans"],
            break_d=data["break_d"],
            break_count=data["break_count"],
            subtask_ids=set(data["subtask_ids"]),
            outcomes=set(data["outcomes"]),
            manifests=[
                Manifest(
                    message_id=m["message_id"],
                    round=m["round"],
                    at=datetime.fromisoformat(m["at"]),
                    subtask_ids=list(m["subtask_ids"]),
                )
                for m in data["manifests"]
            ],
        )


COUNTERS = (
    "corrections",
    "execution_failures",
    "environmental_retries",
    "logical_retries",
    "omitted",
)
LISTS = ("boundary_violations", "drift_alerts", "anomalies")
TALLIES = ("gap_trends", "role_messages", "role_outcomes", "role_failures")


@dataclass
class Window:
    """The statistics of one report window."""

    started_at: datetime | None = None
    runs: set[str] = field(default_factory=set)
    corrections: int = 0
    execution_failures: int = 0
    environmental_retries: int = 0
    logical_retries: int = 0
    omitted: int = 0
    boundary_violations: list[str] = field(default_factory=list)
    drift_alerts: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    gap_trends: Counter[str] = field(default_factory=Counter)
    role_messages: Counter[str] = field(default_factory=Counter)
    role_outcomes: Counter[str] = field(default_factory=Counter)
    role_failures: Counter[str] = field(default_factory=Counter)
    role_drift_flagged: set[str] = field(default_factory=set)

    def is_idle(self) -> bool:
        """Return True when the window saw no run, no anomaly and no tool failure."""
        return not (
            self.runs
            or self.anomalies
            or self.omitted
            or self.execution_failures
            or self.environmental_retries
            or self.logical_retries
        )

    def note(self, entries: list[str], text: str, cap: int) -> None:
        """Append ``text`` to a report list, counting it as omitted past the cap."""
        if len(entries) < cap:
            entries.append(text)
        else:
            self.omitted += 1

    def to_json(self) -> dict[str, Any]:
        """Return the window as JSON data."""
        data: dict[str, Any] = {
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "runs": sorted(self.runs),
            "role_drift_flagged": sorted(self.role_drift_flagged),
        }
        data.update({name: getattr(self, name) for name in COUNTERS + LISTS})
        data.update({name: dict(getattr(self, name)) for name in TALLIES})
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Window:
        """Return a window from its JSON form."""
        started = data["started_at"]
        window = cls(
            started_at=datetime.fromisoformat(started) if started else None,
            runs=set(data["runs"]),
            role_drift_flagged=set(data["role_drift_flagged"]),
        )
        for name in COUNTERS:
            setattr(window, name, int(data[name]))
        for name in LISTS:
            setattr(window, name, list(data[name]))
        for name in TALLIES:
            setattr(window, name, Counter(data[name]))
        return window


@dataclass
class AuditState:
    """Everything the Auditor carries from one envelope to the next."""

    window: Window = field(default_factory=Window)
    runs: dict[str, RunState] = field(default_factory=dict)
    # subtask id -> (run key, message id) of the SubTask that dispatched it.
    subtasks: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Role outcomes and failures of the closed windows: the role drift baseline.
    history_outcomes: Counter[str] = field(default_factory=Counter)
    history_failures: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        """Return the whole state as JSON data."""
        return {
            "window": self.window.to_json(),
            "runs": {key: state.to_json() for key, state in self.runs.items()},
            "subtasks": {sid: list(where) for sid, where in self.subtasks.items()},
            "history_outcomes": dict(self.history_outcomes),
            "history_failures": dict(self.history_failures),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditState:
        """Return the whole state from its JSON form."""
        return cls(
            window=Window.from_json(data["window"]),
            runs={k: RunState.from_json(v) for k, v in data["runs"].items()},
            subtasks={sid: (r, m) for sid, (r, m) in data["subtasks"].items()},
            history_outcomes=Counter(data["history_outcomes"]),
            history_failures=Counter(data["history_failures"]),
        )
