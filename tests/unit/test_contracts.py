"""Message contracts: spec field names, validation that names the field."""

import json

import pytest
from pydantic import ValidationError

from roles.contracts import (
    CONTRACTS,
    AuditEvent,
    AuditQuery,
    AuditReport,
    Criterion,
    DispatchManifest,
    FinalResult,
    Loss,
    MemoryQuery,
    MemoryRecall,
    NextMoves,
    PlanDirective,
    ReplanRequest,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
    normalise_criterion,
    parse_payload,
)
from roles.routes import MESSAGE_TYPES


def test_every_routed_message_type_has_a_contract():
    assert set(MESSAGE_TYPES) <= set(CONTRACTS)
    assert all(CONTRACTS[name].__name__ == name for name in CONTRACTS)


def test_loss_uses_the_spec_json_keys():
    loss = Loss(D=1.0, P=0.5, Omega=0.2, L=0.8)

    assert json.loads(loss.model_dump_json()) == {
        "D": 1.0,
        "P": 0.5,
        "Omega": 0.2,
        "L": 0.8,
    }


def test_plan_directive_parses_the_spec_example():
    payload = {
        "task_id": "find_notes",
        "loss": {"D": 1.0, "P": 0.5, "Omega": 0.2, "L": 0.8},
        "prev_directive": "init",
        "directive": "change_path",
        "blocked_tools": [],
        "blocked_targets": ["ls /a"],
        "failed_criterion": "",
        "failure_class": "mixed",
        "budget_pressure": 0.2,
        "grad_l": 0.0,
        "rationale": "Plateau",
    }

    directive = parse_payload("PlanDirective", payload)

    assert isinstance(directive, PlanDirective)
    # The spec's fields, plus the run's control strategy (GGS unless said).
    assert directive.model_dump(mode="json") == {**payload, "control": "ggs"}


def test_invalid_data_names_the_field():
    with pytest.raises(ValidationError, match="directive"):
        PlanDirective.model_validate(
            {
                "task_id": "t",
                "loss": {"D": 0, "P": 0, "Omega": 0, "L": 0},
                "prev_directive": "init",
                "directive": "abandon",
                "failure_class": "mixed",
                "budget_pressure": 0,
                "grad_l": 0,
            }
        )
    with pytest.raises(ValidationError, match="Omega"):
        Loss(D=0, P=0, Omega=1.5, L=0)
    with pytest.raises(ValidationError, match="task_id"):
        TaskSpec(task_id="", intent="x", raw_input="x")


def test_final_result_directive_is_terminal_only():
    with pytest.raises(ValidationError, match="directive"):
        FinalResult(
            task_id="t",
            summary="s",
            loss=Loss(D=0, P=0, Omega=0, L=0),
            prev_directive="init",
            directive="refine",
        )


def test_unknown_keys_are_ignored_and_optional_extras_default():
    request = ReplanRequest.model_validate({"task_id": "t", "novel": 1})

    assert request.recommendation == "replan"
    assert request.task_criteria_verdicts == []
    assert request.intent == ""


def test_parse_payload_refuses_an_unknown_type():
    with pytest.raises(ValueError, match="unknown message type"):
        parse_payload("Telegram", {})


def test_parse_payload_passes_a_model_instance_through():
    query = AuditQuery()

    assert parse_payload("AuditQuery", query) is query
    assert parse_payload("AuditQuery", {}) == AuditQuery()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("file exists", Criterion(criterion="file exists")),
        (
            {"criterion": "mentions Paris", "mode": "plausible"},
            Criterion(criterion="mentions Paris", mode="plausible"),
        ),
        (
            {"criterion": "exit 0", "check": {"type": "exit_code", "equals": 0}},
            Criterion(criterion="exit 0", check={"type": "exit_code", "equals": 0}),
        ),
    ],
)
def test_criteria_normalise_from_strings_and_dicts(value, expected):
    criterion = normalise_criterion(value)

    assert criterion == expected
    assert normalise_criterion(criterion) is criterion


def test_a_plain_criterion_is_verifiable_by_default():
    assert normalise_criterion("x").mode == "verifiable"


def test_bad_criteria_are_refused():
    with pytest.raises(ValidationError, match="mode"):
        normalise_criterion({"criterion": "x", "mode": "vibes"})
    with pytest.raises(ValidationError, match="check"):
        normalise_criterion({"criterion": "x", "check": {"type": "smell"}})
    with pytest.raises(ValidationError, match="criterion"):
        normalise_criterion({"mode": "plausible"})
    with pytest.raises(TypeError, match="str or a dict"):
        normalise_criterion(3)


def test_subtask_keeps_mixed_criteria_and_refuses_sequence_zero():
    subtask = SubTask(
        subtask_id="u",
        parent_task_id="t",
        intent="list",
        success_criteria=["exit 0", {"criterion": "lists a.txt", "mode": "plausible"}],
    )

    assert subtask.success_criteria[0] == "exit 0"
    assert subtask.success_criteria[1].mode == "plausible"
    assert subtask.sequence == 1
    with pytest.raises(ValidationError, match="sequence"):
        SubTask(subtask_id="u", parent_task_id="t", intent="x", sequence=0)


def test_manifest_without_subtasks_carries_the_reason():
    manifest = DispatchManifest(task_id="t", reason="model unreachable")

    assert manifest.subtask_ids == []
    assert manifest.reason == "model unreachable"


def test_outcome_validates_its_verdicts():
    with pytest.raises(ValidationError, match="verdict"):
        SubTaskOutcome.model_validate(
            {
                "subtask_id": "u",
                "parent_task_id": "t",
                "status": "failed",
                "criteria_verdicts": [{"criterion": "c", "verdict": "maybe"}],
            }
        )


def test_audit_event_knows_every_anomaly():
    for anomaly in (
        "none",
        "boundary_violation",
        "drift",
        "convergence_failure",
        "ggs_thrashing",
        "duplicate_subtask_id",
        "fanin_incomplete",
        "role_drift",
    ):
        event = AuditEvent(
            from_role="R1", to_role="R2", message_type="TaskSpec", anomaly=anomaly
        )
        assert event.anomaly == anomaly
    with pytest.raises(ValidationError, match="anomaly"):
        AuditEvent(from_role="R1", to_role="R2", message_type="TaskSpec", anomaly="odd")


def test_audit_report_period_uses_from_and_to_keys():
    report = AuditReport.model_validate(
        {"period": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:05:00Z"}}
    )

    data = report.model_dump(mode="json")

    assert set(data["period"]) == {"from", "to"}
    assert data["period"]["from"].startswith("2026-01-01T00:00:00")


def test_memory_query_defaults_to_the_intent_pair():
    query = MemoryQuery(task_id="find_notes")

    assert (query.space, query.entity) == ("intent:find_notes", "env:local")


def test_memory_recall_is_available_by_default_and_carries_megrams():
    recall = MemoryRecall(
        task_id="t",
        space="intent:t",
        entity="env:local",
        sops=[{"space": "intent:t", "entity": "env:local", "f": 1, "sigma": 1, "k": 0}],
    )

    assert recall.available is True
    assert recall.sops[0].level == "M"
    assert recall.action == "Ignore"


def test_next_moves_needs_two_or_three_moves():
    assert len(NextMoves(task_id="t", next_moves=["a", "b"]).next_moves) == 2
    with pytest.raises(ValidationError, match="next_moves"):
        NextMoves(task_id="t", next_moves=["a"])
    with pytest.raises(ValidationError, match="next_moves"):
        NextMoves(task_id="t", next_moves=["a", "b", "c", "d"])


@pytest.mark.parametrize(
    ("type_", "payload", "field"),
    [
        ("ApprovalDecision", {"approval_id": "a", "decision": "maybe"}, "decision"),
        (
            "ApprovalRequest",
            {"approval_id": "a", "subtask_id": "s", "tool": "shell"},
            "reason",
        ),
        ("ClarificationRequest", {"question": ""}, "question"),
        ("ExecutionResult", {"subtask_id": "s", "status": "done"}, "status"),
        (
            "CorrectionSignal",
            {"subtask_id": "s", "attempt_number": 0},
            "attempt_number",
        ),
        ("OutcomeSummary", {"task_id": "t", "elapsed_ms": -1}, "elapsed_ms"),
        ("Megram", {"space": "s", "entity": "e", "f": 2, "sigma": 0, "k": 0}, "f"),
    ],
)
def test_each_message_refuses_bad_data_by_field(type_, payload, field):
    with pytest.raises(ValidationError, match=field):
        parse_payload(type_, payload)


def test_approval_and_clarification_messages_parse():
    request = parse_payload(
        "ApprovalRequest",
        {
            "approval_id": "a1",
            "subtask_id": "s1",
            "tool": "shell",
            "command": "rm -rf build",
            "reason": "rm deletes files permanently",
        },
    )
    answer = parse_payload("ClarificationAnswer", {})

    assert request.args == {}
    assert answer.answer == ""
