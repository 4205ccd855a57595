"""Which worker queue delivers a message, and which are delivered by publication."""

import pytest

from roles import routes


@pytest.mark.parametrize(
    ("recipient", "type_", "queue"),
    [
        ("R2", "TaskSpec", "pipeline"),
        ("R3", "SubTask", "pipeline"),
        ("R3", "ApprovalDecision", "pipeline"),
        ("R4b", "SubTaskOutcome", "pipeline"),
        ("R5", "MemoryQuery", "memory"),
        ("R5", "Megram", "memory"),
        ("User", "FinalResult", None),
        ("R6", "AuditQuery", None),
        # The fast loop ran inside the executor's task: its record is published.
        ("R4a", "ExecutionResult", None),
        ("R3", "CorrectionSignal", None),
    ],
)
def test_queue_for_a_message(recipient, type_, queue):
    assert routes.queue_for(recipient, type_) == queue


def test_every_record_only_message_is_on_a_route():
    routed = {(type_, recipient) for type_, _, recipient in routes.ROUTES}
    assert routes.RECORD_ONLY <= routed


def test_by_recipient_alone_a_role_keeps_its_queue():
    # The sweeper asks so, to deliver records stored before publication sufficed.
    assert routes.queue_for("R4a") == "pipeline"
    assert routes.queue_for("R3") == "pipeline"
