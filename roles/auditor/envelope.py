"""Bus envelopes as the Auditor reads them: parsing, times, numbers, the route check.

A bus envelope is the dict the bus publishes, e.g.::

    {"id": 42, "run": "5f0c…", "round": 1, "sender": "R3", "recipient": "R4a",
     "type": "ExecutionResult", "payload": {...}, "created_at": "2025-01-01T…Z"}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from roles import routes


@dataclass(frozen=True)
class Envelope:
    """A validated bus envelope."""

    id: int
    run: str | None
    round: int
    sender: str
    recipient: str
    type: str
    payload: dict[str, Any]
    created_at: datetime

    @property
    def run_label(self) -> str:
        """Return the run id for details, ``-`` for messages about no run."""
        return self.run or "-"


REQUIRED_KEYS = ("id", "sender", "recipient", "type", "created_at")


def parse_envelope(data: dict[str, Any]) -> Envelope:
    """Return the envelope as an Envelope; raise ValueError naming a bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"envelope must be a dict, not {type(data).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise ValueError(f"envelope lacks {', '.join(missing)}")
    if not isinstance(data["id"], int) or data["id"] < 1:
        raise ValueError(f"envelope id must be a positive integer, not {data['id']!r}")
    payload = data.get("payload")
    run = data.get("run")
    return Envelope(
        id=data["id"],
        run=str(run) if run else None,
        round=int(data.get("round") or 0),
        sender=str(data["sender"]),
        recipient=str(data["recipient"]),
        type=str(data["type"]),
        # The Auditor observes whatever was sent; a non-object payload has no fields.
        payload=payload if isinstance(payload, dict) else {},
        created_at=parse_time(data["created_at"]),
    )


def parse_time(value: datetime | str) -> datetime:
    """Return ``value`` as an aware UTC datetime; raise ValueError if it is not one."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"created_at is not an ISO time: {value!r}") from None
    if not isinstance(value, datetime):
        raise ValueError(f"created_at must be a time, not {type(value).__name__}")
    if value.tzinfo is None:
        raise ValueError(f"created_at must carry a time zone: {value.isoformat()}")
    return value.astimezone(UTC)


def number(payload: dict[str, Any], key: str) -> float | None:
    """Return ``payload[key]`` as a float, or None when absent or not a number."""
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def boundary_detail(env: Envelope) -> str | None:
    """Return why the message is off the route table, or None when it is on it."""
    if routes.is_on_route(env.type, env.sender, env.recipient):
        return None
    return f"unexpected {env.sender}→{env.recipient} for {env.type}"


def is_audit_query(envelope: dict[str, Any] | Envelope) -> bool:
    """Return True for the only instruction R6 accepts: User's AuditQuery to R6."""
    if isinstance(envelope, Envelope):
        triple = (envelope.type, envelope.sender, envelope.recipient)
    else:
        triple = (
            envelope.get("type"),
            envelope.get("sender"),
            envelope.get("recipient"),
        )
    return triple == ("AuditQuery", "User", "R6")
