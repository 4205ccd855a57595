"""R6 Auditor rules: each detection at and below its threshold, and the window."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from roles import routes
from roles.auditor import AuditConfig, Auditor, is_audit_query

T0 = datetime(2025, 1, 1, tzinfo=UTC)

# The route table of DESIGN §4, written out so a change to routes.py shows here.
DESIGN_ROUTES = [
    ("TaskSpec", "R1", "R2"),
    ("ClarificationRequest", "R1", "User"),
    ("ClarificationAnswer", "User", "R1"),
    ("MemoryQuery", "R2", "R5"),
    ("MemoryRecall", "R5", "R2"),
    ("DispatchManifest", "R2", "R4b"),
    ("SubTask", "R2", "R3"),
    ("ExecutionResult", "R3", "R4a"),
    ("CorrectionSignal", "R4a", "R3"),
    ("ApprovalRequest", "R3", "User"),
    ("ApprovalDecision", "User", "R3"),
    ("SubTaskOutcome", "R4a", "R4b"),
    ("ReplanRequest", "R4b", "R7"),
    ("OutcomeSummary", "R4b", "R7"),
    ("PlanDirective", "R7", "R2"),
    ("Megram", "R7", "R5"),
    ("Megram", "User", "R5"),
    ("FinalResult", "R7", "User"),
    ("NextMoves", "R2", "User"),
    ("AuditQuery", "User", "R6"),
    ("AuditReport", "R6", "User"),
]
SENDERS = {(type_, sender): recipient for type_, sender, recipient in DESIGN_ROUTES}


class Bus:
    """Build envelopes with increasing ids and times for one Auditor."""

    def __init__(self, auditor: Auditor | None = None) -> None:
        self.auditor = auditor or Auditor(started_at=T0, id_factory=counter())
        self.ids = itertools.count(1)
        self.at = T0

    def send(self, type_, sender, recipient=None, run="run-1", round=1, **payload):
        self.at += timedelta(seconds=1)
        envelope = {
            "id": next(self.ids),
            "run": run,
            "round": round,
            "sender": sender,
            "recipient": recipient or SENDERS[(type_, sender)],
            "type": type_,
            "payload": payload,
            "created_at": self.at.isoformat(),
        }
        return self.auditor.observe(envelope)


def counter():
    numbers = itertools.count(1)
    return lambda: f"id-{next(numbers)}"


def directive(bus, name="refine", grad_l=0.0, d=0.5, run="run-1"):
    return bus.send(
        "PlanDirective",
        "R7",
        run=run,
        task_id="t",
        directive=name,
        grad_l=grad_l,
        loss={"D": d, "P": 0.2, "Omega": 0.1, "L": 0.4},
    )


@pytest.fixture
def bus():
    return Bus()


@pytest.mark.parametrize(("type_", "sender", "recipient"), DESIGN_ROUTES)
def test_every_design_route_passes_the_boundary_check(bus, type_, sender, recipient):
    event = bus.send(type_, sender, recipient)
    assert event.anomaly != "boundary_violation"
    assert routes.is_on_route(type_, sender, recipient)


def test_off_route_message_is_a_boundary_violation(bus):
    event = bus.send("MemoryQuery", "R3", "R5", task_id="t")
    assert event.anomaly == "boundary_violation"
    assert event.detail == "unexpected R3→R5 for MemoryQuery"
    report = bus.auditor.report(bus.at)
    assert report.boundary_violations == ["unexpected R3→R5 for MemoryQuery"]
    assert report.anomalies == ["boundary_violation: unexpected R3→R5 for MemoryQuery"]


def test_auditor_sending_to_a_role_is_a_boundary_violation(bus):
    assert bus.send("AuditReport", "R6", "R2").anomaly == "boundary_violation"


def test_audit_query_is_accepted_only_from_the_user():
    assert is_audit_query({"type": "AuditQuery", "sender": "User", "recipient": "R6"})
    assert not is_audit_query({"type": "AuditQuery", "sender": "R2", "recipient": "R6"})


def test_audit_query_from_a_role_is_a_boundary_violation(bus):
    assert bus.send("AuditQuery", "R2", "R6").anomaly == "boundary_violation"


def test_every_event_records_its_message(bus):
    event = bus.send("TaskSpec", "R1", task_id="t", intent="i", raw_input="x")
    assert event.message_id == 1
    assert event.run_id == "run-1"
    assert (event.from_role, event.to_role, event.message_type) == (
        "R1",
        "R2",
        "TaskSpec",
    )
    assert event.anomaly == "none" and event.detail is None
    assert event.timestamp == T0 + timedelta(seconds=1)
    assert event.event_id == "id-1"


def test_correction_count_at_threshold_is_drift(bus):
    event = bus.send("ReplanRequest", "R4b", task_id="t", correction_count=5)
    assert event.anomaly == "drift"
    assert "correction_count=5" in event.detail and "replan #1" in event.detail
    assert bus.auditor.report(bus.at).drift_alerts == [event.detail]


def test_correction_count_below_threshold_is_not_drift(bus):
    assert bus.send("ReplanRequest", "R4b", correction_count=4).anomaly == "none"


def test_gradient_above_threshold_is_a_convergence_failure(bus):
    event = directive(bus, grad_l=0.11)
    assert event.anomaly == "convergence_failure"
    assert "∇L=0.110" in event.detail


def test_gradient_at_threshold_is_not_a_convergence_failure(bus):
    assert directive(bus, grad_l=0.1).anomaly == "none"


def test_two_break_symmetry_without_d_decreasing_is_thrashing(bus):
    assert directive(bus, "break_symmetry", d=0.5).anomaly == "none"
    event = directive(bus, "break_symmetry", d=0.5)
    assert event.anomaly == "ggs_thrashing"
    assert "2 consecutive break_symmetry" in event.detail


def test_break_symmetry_with_d_decreasing_is_not_thrashing(bus):
    directive(bus, "break_symmetry", d=0.5)
    assert directive(bus, "break_symmetry", d=0.4).anomaly == "none"


def test_another_directive_between_break_symmetry_resets_thrashing(bus):
    directive(bus, "break_symmetry", d=0.5)
    directive(bus, "change_path", d=0.5)
    assert directive(bus, "break_symmetry", d=0.5).anomaly == "none"


def test_thrashing_is_counted_per_run(bus):
    directive(bus, "break_symmetry", d=0.5, run="a")
    assert directive(bus, "break_symmetry", d=0.5, run="b").anomaly == "none"


def test_subtask_id_dispatched_twice_is_flagged(bus):
    assert bus.send("SubTask", "R2", subtask_id="s1").anomaly == "none"
    assert bus.send("SubTask", "R2", subtask_id="s2").anomaly == "none"
    event = bus.send("SubTask", "R2", subtask_id="s1")
    assert event.anomaly == "duplicate_subtask_id"
    assert "subtask s1 dispatched again in message #3" in event.detail


def manifest(bus, subtask_ids, run="run-1", round=1):
    bus.send("DispatchManifest", "R2", run=run, round=round, subtask_ids=subtask_ids)
    return bus.at


def outcome(bus, subtask_id, status="matched", run="run-1"):
    return bus.send(
        "SubTaskOutcome", "R4a", run=run, subtask_id=subtask_id, status=status
    )


def test_fan_in_missing_an_outcome_after_the_deadline_is_flagged(bus):
    sent = manifest(bus, ["s1", "s2"])
    outcome(bus, "s1")
    [event] = bus.auditor.tick(sent + timedelta(seconds=301))
    assert event.anomaly == "fanin_incomplete"
    assert event.message_id == 1 and event.message_type == "DispatchManifest"
    assert "1 of 2 outcomes" in event.detail and "missing s2" in event.detail
    assert bus.auditor.tick(sent + timedelta(seconds=400)) == []


def test_fan_in_at_the_deadline_is_not_yet_flagged(bus):
    sent = manifest(bus, ["s1", "s2"])
    assert bus.auditor.tick(sent + timedelta(seconds=300)) == []


def test_complete_fan_in_is_never_flagged(bus):
    sent = manifest(bus, ["s1", "s2"])
    outcome(bus, "s2", status="failed")
    outcome(bus, "s1")
    assert bus.auditor.tick(sent + timedelta(seconds=1000)) == []


def test_fan_in_deadline_is_configurable():
    bus = Bus(Auditor(AuditConfig(fanin_deadline_s=10), started_at=T0))
    sent = manifest(bus, ["s1"])
    assert bus.auditor.tick(sent + timedelta(seconds=10)) == []
    assert len(bus.auditor.tick(sent + timedelta(seconds=11))) == 1


def test_final_result_drops_the_runs_counters(bus):
    sent = manifest(bus, ["s1"])
    bus.send("SubTask", "R2", subtask_id="s1")
    directive(bus, "break_symmetry", d=0.5)
    bus.send("FinalResult", "R7", task_id="t", directive="abandon")
    assert bus.auditor.state.runs == {} and bus.auditor.state.subtasks == {}
    assert directive(bus, "break_symmetry", d=0.5).anomaly == "none"
    assert bus.auditor.tick(sent + timedelta(seconds=1000)) == []


def test_off_route_final_result_does_not_drop_the_runs_counters(bus):
    directive(bus, "break_symmetry", d=0.5)
    assert bus.send("FinalResult", "R2", "User").anomaly == "boundary_violation"
    assert directive(bus, "break_symmetry", d=0.5).anomaly == "ggs_thrashing"


def execution_results(bus, ok, failed):
    events = [bus.send("ExecutionResult", "R3", status="completed") for _ in range(ok)]
    events += [
        bus.send("ExecutionResult", "R3", status="failed") for _ in range(failed)
    ]
    return events


def test_failure_rate_over_twice_the_baseline_is_role_drift(bus):
    execution_results(bus, ok=9, failed=1)  # baseline 10 %
    bus.auditor.report(bus.at)
    events = execution_results(bus, ok=7, failed=3)  # 30 % > 2 × 10 %
    assert [e.anomaly for e in events].count("role_drift") == 1
    assert events[-1].anomaly == "role_drift"
    assert "R3 failure rate 3/10 (30%)" in events[-1].detail
    assert "1/10 (10%)" in events[-1].detail


def test_failure_rate_of_exactly_twice_the_baseline_is_not_role_drift(bus):
    execution_results(bus, ok=8, failed=2)  # baseline 20 %
    bus.auditor.report(bus.at)
    events = execution_results(bus, ok=6, failed=4)  # 40 % = 2 × 20 %
    assert all(e.anomaly == "none" for e in events)


def test_too_few_failures_are_not_role_drift(bus):
    execution_results(bus, ok=10, failed=0)
    bus.auditor.report(bus.at)
    events = execution_results(bus, ok=3, failed=2)  # 40 % vs 0 %, but only 2
    assert all(e.anomaly == "none" for e in events)


def test_role_drift_needs_a_baseline(bus):
    events = execution_results(bus, ok=0, failed=5)
    assert all(e.anomaly == "none" for e in events)


@pytest.mark.parametrize(
    ("type_", "sender", "failure", "success"),
    [
        ("SubTaskOutcome", "R4a", {"status": "failed"}, {"status": "matched"}),
        ("DispatchManifest", "R2", {"subtask_ids": []}, {"subtask_ids": ["x"]}),
        ("MemoryRecall", "R5", {"available": False}, {"available": True}),
        ("FinalResult", "R7", {"directive": "abandon"}, {"directive": "success"}),
    ],
)
def test_each_roles_failures_count_toward_its_error_rate(
    bus, type_, sender, failure, success
):
    bus.send(type_, sender, run=None, **failure)
    bus.send(type_, sender, run=None, **success)
    health = bus.auditor.report(bus.at).role_health[sender]
    assert (health.outcomes, health.failures, health.error_rate) == (2, 1, 0.5)


def test_replan_requests_are_r4b_failures(bus):
    bus.send("ReplanRequest", "R4b", task_id="t")
    bus.send("OutcomeSummary", "R4b", task_id="t")
    health = bus.auditor.report(bus.at).role_health["R4b"]
    assert (health.messages, health.failures, health.error_rate) == (2, 1, 0.5)


def test_report_counts_distinct_runs_corrections_trends_and_tool_health(bus):
    for run in ("a", "a", "b"):
        bus.send("DispatchManifest", "R2", run=run, subtask_ids=[])
    bus.send("CorrectionSignal", "R4a", run="a", failure_class="environmental")
    bus.send("CorrectionSignal", "R4a", run="a", failure_class="logical")
    bus.send("CorrectionSignal", "R4a", run="b", failure_class="logical")
    bus.send("ExecutionResult", "R3", run="b", status="failed")
    directive(bus, grad_l=-0.2, run="a")
    directive(bus, grad_l=0.0, run="b")
    report = bus.auditor.report(bus.at, trigger="on_demand", in_reply_to=7)
    assert report.tasks_observed == 2
    assert report.convergence_health.avg_correction_count == 1.5
    assert report.convergence_health.gap_trend_distribution == {
        "improving": 1,
        "stable": 1,
        "worsening": 0,
    }
    assert report.tool_health.model_dump() == {
        "execution_failures": 1,
        "environmental_retries": 1,
        "logical_retries": 2,
    }
    assert (report.trigger, report.in_reply_to) == ("on_demand", 7)
    assert report.period.from_ == T0 and report.period.to == bus.at


def test_report_starts_a_new_idle_window(bus):
    assert bus.auditor.is_idle()
    bus.send("DispatchManifest", "R2", subtask_ids=[])
    assert not bus.auditor.is_idle()
    first = bus.auditor.report(bus.at)
    second = bus.auditor.report(bus.at + timedelta(minutes=5))
    assert first.tasks_observed == 1 and second.tasks_observed == 0
    assert second.period.from_ == bus.at
    assert bus.auditor.is_idle()


def test_a_message_about_no_run_leaves_the_window_idle(bus):
    bus.send("AuditQuery", "User", run=None)
    assert bus.auditor.is_idle()


def test_listed_findings_are_capped_and_the_rest_counted():
    bus = Bus(Auditor(AuditConfig(max_listed=2), started_at=T0))
    for _ in range(5):
        bus.send("SubTask", "R3", "R3")
    report = bus.auditor.report(bus.at)
    assert len(report.boundary_violations) == 2
    assert report.anomalies[-1] == "6 more report entries not listed"


def test_snapshot_restores_an_auditor_that_continues_the_stream(bus):
    manifest(bus, ["s1"])
    bus.send("SubTask", "R2", subtask_id="s1")
    directive(bus, "break_symmetry", d=0.5)
    execution_results(bus, ok=1, failed=1)
    restored = Auditor.restore(bus.auditor.snapshot())
    assert restored.snapshot() == bus.auditor.snapshot()
    bus.auditor = restored
    assert directive(bus, "break_symmetry", d=0.5).anomaly == "ggs_thrashing"
    assert bus.send("SubTask", "R2", subtask_id="s1").anomaly == "duplicate_subtask_id"
    assert restored.report(bus.at).tool_health.execution_failures == 1


def test_malformed_envelope_is_refused_with_a_clear_error():
    auditor = Auditor()
    with pytest.raises(ValueError, match="envelope lacks type"):
        auditor.observe({"id": 1, "sender": "R1", "recipient": "R2", "created_at": ""})
    with pytest.raises(ValueError, match="time zone"):
        auditor.observe(
            {
                "id": 1,
                "sender": "R1",
                "recipient": "R2",
                "type": "TaskSpec",
                "created_at": "2025-01-01T00:00:00",
            }
        )


def test_unknown_state_version_is_refused():
    with pytest.raises(ValueError, match="state version"):
        Auditor.restore({"version": 99})


def test_non_positive_threshold_is_refused():
    with pytest.raises(ValueError, match="fanin_deadline_s must be > 0"):
        AuditConfig(fanin_deadline_s=0)
