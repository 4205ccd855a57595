"""Reading stored payloads for display: valid fields survive a broken payload."""

import pytest

from roles.claims.evidence import split_exit_code
from roles.contracts import FinalResult, PlanDirective, SubTask, read_payload


def test_a_valid_payload_reads_as_its_contract():
    payload = {
        "subtask_id": "s1",
        "parent_task_id": "t",
        "intent": "list files",
        "sequence": 2,
    }

    subtask = read_payload("SubTask", payload)

    assert subtask == SubTask(**payload)


def test_a_broken_payload_keeps_its_valid_fields_and_defaults_the_rest():
    payload = {"directive": "refine", "loss": "bad", "grad_l": "0.5"}

    directive = read_payload("PlanDirective", payload)

    assert isinstance(directive, PlanDirective)
    assert (directive.directive, directive.grad_l) == ("refine", 0.5)
    assert directive.loss is None and directive.task_id is None
    assert directive.blocked_targets == [] and directive.rationale == ""


def test_a_value_outside_its_literal_is_dropped():
    final = read_payload("FinalResult", {"summary": "hi", "directive": "direct"})

    assert isinstance(final, FinalResult)
    assert (final.summary, final.directive, final.replans) == ("hi", None, 0)


def test_a_payload_that_is_not_an_object_reads_as_all_defaults():
    report = read_payload("AuditReport", ["junk"])

    assert report.tasks_observed == 0 and report.anomalies == []


def test_an_unknown_message_type_is_refused():
    with pytest.raises(ValueError, match="unknown message type"):
        read_payload("Nope", {})


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("[exit code 0]\nhello\n", (0, "hello\n")),
        ("[exit code -9]\n", (-9, "")),
        ("[exit code 2]", (2, "")),
        ("hello [exit code 1]", (None, "hello [exit code 1]")),
        ("", (None, "")),
    ],
)
def test_split_exit_code_reads_the_leading_exit_line(output, expected):
    assert split_exit_code(output) == expected
