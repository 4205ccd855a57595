"""Routing decisions, QA's file pre-step and the three-tier escalation."""

import os

import pytest

from roles.projects.config import ProjectConfig
from roles.projects.contracts import (
    AssessorVerdict,
    ImplementationResult,
    QAVerdict,
    TaskPlan,
)
from roles.projects.routing import (
    after_assessor,
    after_mark_complete,
    after_qa,
    after_task_planner,
    check_reported_files,
    escalate,
    failed_run_verdict,
    is_review_due,
    prestep_verdict,
)

PASS = QAVerdict(passed=True)
FAIL = QAVerdict(passed=False, feedback="the test does not run")


@pytest.mark.parametrize(
    ("plan", "route"),
    [
        (
            TaskPlan(action="implement", task_description="a", implementation_plan="p"),
            "implementor",
        ),
        (TaskPlan(action="skip", task_description="a"), "mark_complete"),
        (TaskPlan(action="abort", escalation_context="why"), "mark_failed"),
        (TaskPlan(action="milestone_done"), "assessor"),
    ],
)
def test_the_task_planners_action_picks_the_next_node(plan, route):
    assert after_task_planner(plan) == route


def test_qa_pass_completes_and_failure_retries_until_max_attempts():
    assert after_qa(PASS, 3) == "mark_complete"
    assert after_qa(FAIL, 1) == "increment_attempt"
    assert after_qa(FAIL, 2) == "increment_attempt"
    assert after_qa(FAIL, 3) == "mark_failed"
    assert after_qa(FAIL, 3, ProjectConfig(max_attempts=5)) == "increment_attempt"


def test_the_periodic_review_is_due_at_exactly_the_interval():
    assert [is_review_due(n) for n in range(6)] == [False] * 5 + [True]
    assert after_mark_complete(4) == "task_planner"
    assert after_mark_complete(5) == "assessor"
    assert after_mark_complete(2, ProjectConfig(review_interval=2)) == "assessor"


@pytest.mark.parametrize(
    ("verdict", "index", "route"),
    [
        (AssessorVerdict(verdict="aligned"), 0, "task_planner"),
        (
            AssessorVerdict(verdict="minor_drift", correction_hint="h"),
            0,
            "task_planner",
        ),
        (
            AssessorVerdict(verdict="major_divergence", divergence_analysis="a"),
            1,
            "scope_agent",
        ),
        (AssessorVerdict(verdict="milestone_complete"), 0, "next_milestone"),
        (AssessorVerdict(verdict="milestone_complete"), 1, "report"),
    ],
)
def test_the_assessors_verdict_picks_the_next_node(verdict, index, route):
    assert after_assessor(verdict, index, 2) == route


def test_good_reported_files_pass_the_pre_step(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "cli.py").write_text("print('hi')\n")
    (tmp_path / "README").write_text("x")
    files = ["src/cli.py", "README", str(tmp_path / "README")]
    assert check_reported_files(tmp_path, files) == []
    result = ImplementationResult(files=files)
    assert prestep_verdict(tmp_path, result) is None


def test_missing_empty_directory_and_outside_files_fail_the_pre_step(tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "ok.py").write_text("x = 1\n")
    files = ["ok.py", "gone.py", "empty.py", "pkg", "../elsewhere.py", "/etc/passwd"]
    assert check_reported_files(tmp_path, files) == [
        "gone.py: missing",
        "empty.py: empty",
        "pkg: not a regular file",
        "../elsewhere.py: outside the working directory",
        "/etc/passwd: outside the working directory",
    ]


def test_a_symlink_out_of_the_working_directory_fails_the_pre_step(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "link.txt").symlink_to(outside)
    assert check_reported_files(root, ["link.txt"]) == [
        "link.txt: outside the working directory"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_fails_the_pre_step(tmp_path):
    locked = tmp_path / "locked.py"
    locked.write_text("x")
    locked.chmod(0)
    try:
        assert check_reported_files(tmp_path, ["locked.py"])[0].startswith(
            "locked.py: not readable"
        )
    finally:
        locked.chmod(0o600)


def test_no_reported_file_fails_the_pre_step_with_a_verdict(tmp_path):
    verdict = prestep_verdict(tmp_path, ImplementationResult(files=[]))
    assert verdict is not None and not verdict.passed
    assert verdict.issues == ["no files reported: the task changed nothing"]
    assert verdict.feedback.startswith("Files check failed: no files reported")


def test_a_run_that_gave_up_is_a_failing_verdict_with_its_summary():
    result = ImplementationResult(success=False, result_summary="pytest not found")
    verdict = failed_run_verdict(result)
    assert not verdict.passed and "pytest not found" in verdict.feedback


@pytest.mark.parametrize(
    ("trigger", "tier"),
    [
        ("qa_failed", 1),
        ("abort", 2),
        ("max_attempts", 2),
        ("minor_drift", 3),
        ("major_divergence", 3),
    ],
)
def test_each_trigger_escalates_to_its_tier(trigger, tier):
    event = escalate(trigger, milestone_index=1, task_id="t4", detail="d" * 900)
    assert (event.tier, event.trigger, event.task_id) == (tier, trigger, "t4")
    assert len(event.detail) <= 500
