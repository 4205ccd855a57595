"""R1's direct answer is a message of its own: on route, valid, an R1 outcome."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from roles import routes
from roles.auditor import Auditor
from roles.contracts import parse_payload

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def envelope(type_: str, sender: str, recipient: str, payload: dict) -> dict:
    return {
        "id": 1,
        "run": "run-1",
        "round": 0,
        "sender": sender,
        "recipient": recipient,
        "type": type_,
        "payload": payload,
        "created_at": T0.isoformat(),
    }


def test_r1_may_answer_the_user_directly_and_no_one_else():
    assert routes.is_on_route("DirectResponse", "R1", "User")
    assert not routes.is_on_route("DirectResponse", "R7", "User")
    assert not routes.is_on_route("FinalResult", "R1", "User")


def test_a_direct_response_carries_the_answer_and_the_input():
    message = parse_payload("DirectResponse", {"answer": "Hi!", "raw_input": "hello"})

    assert (message.answer, message.raw_input) == ("Hi!", "hello")
    with pytest.raises(ValidationError):
        parse_payload("DirectResponse", {"raw_input": "hello"})


def test_the_auditor_counts_a_direct_answer_as_r1_s_successful_outcome():
    auditor = Auditor(started_at=T0, id_factory=lambda: "report")

    event = auditor.observe(envelope("DirectResponse", "R1", "User", {"answer": "Hi!"}))

    assert event.anomaly != "boundary_violation"
    health = auditor.report(T0).role_health["R1"]
    assert (health.messages, health.outcomes, health.failures) == (1, 1, 0)
