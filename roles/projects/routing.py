"""Every routing decision of a project, as the spec's graph names them.

``after_task_planner``, ``after_qa``, ``after_mark_complete`` and
``after_assessor`` return the next node; ``is_review_due`` is the periodic
counter; ``check_reported_files`` is QA's deterministic pre-step (no LLM, no
subprocess); ``escalate`` files a problem under its tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.contracts import (
    TIERS,
    AssessorVerdict,
    EscalationEvent,
    ImplementationResult,
    QAVerdict,
    TaskPlan,
    Trigger,
    clip,
)

AfterPlanner = Literal["implementor", "mark_complete", "mark_failed", "assessor"]
AfterQA = Literal["mark_complete", "increment_attempt", "mark_failed"]
AfterComplete = Literal["task_planner", "assessor"]
AfterAssessor = Literal["task_planner", "next_milestone", "scope_agent", "report"]

PLANNER_ROUTES: dict[str, AfterPlanner] = {
    "implement": "implementor",
    "skip": "mark_complete",
    "abort": "mark_failed",
    "milestone_done": "assessor",
}


def after_task_planner(plan: TaskPlan) -> AfterPlanner:
    """Return where the TaskPlanner's action leads: run, record, fail or assess."""
    return PLANNER_ROUTES[plan.action]


def after_qa(
    verdict: QAVerdict, attempt: int, config: ProjectConfig = DEFAULT_CONFIG
) -> AfterQA:
    """Return the next step after QA judged ``attempt`` of the current task.

    A failure goes back to the TaskPlanner, which alone decides how to retry,
    until ``max_attempts`` attempts have failed; then the task is marked failed
    and the Assessor weighs what that means for the milestone.
    """
    if verdict.passed:
        return "mark_complete"
    if attempt < config.max_attempts:
        return "increment_attempt"
    return "mark_failed"


def is_review_due(
    tasks_since_review: int, config: ProjectConfig = DEFAULT_CONFIG
) -> bool:
    """Return True once ``review_interval`` tasks completed since the last review.

    Reviewing after every task judges short-term direction too early; the
    counter resets whenever the Assessor gives a verdict, whatever asked for it.
    """
    return tasks_since_review >= config.review_interval


def after_mark_complete(
    tasks_since_review: int, config: ProjectConfig = DEFAULT_CONFIG
) -> AfterComplete:
    """Return the Assessor when a periodic review is due, else the next round."""
    return "assessor" if is_review_due(tasks_since_review, config) else "task_planner"


def after_assessor(
    verdict: AssessorVerdict, milestone_index: int, milestone_count: int
) -> AfterAssessor:
    """Return where the Assessor's verdict leads.

    aligned and minor_drift keep planning (the drift with its hint); a complete
    milestone advances to the next one or, after the last, to the report;
    major_divergence goes back to the ScopeAgent.
    """
    if verdict.verdict == "major_divergence":
        return "scope_agent"
    if verdict.verdict == "milestone_complete":
        is_last = milestone_index + 1 >= milestone_count
        return "report" if is_last else "next_milestone"
    return "task_planner"


def check_reported_files(root: Path, files: Sequence[str]) -> list[str]:
    """Return what is wrong with the reported files; [] when every one is good.

    A file is good when it lies inside ``root``, exists as a regular file, is
    non-empty and can be read. No file at all is a failure too: the Implementor
    must change files, and a task with nothing to do is a TaskPlanner skip.
    """
    if not files:
        return ["no files reported: the task changed nothing"]
    base = root.resolve()
    problems = []
    for name in dict.fromkeys(files):
        problem = _file_problem(base, name)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems


def _file_problem(base: Path, name: str) -> str:
    path = (base / name).resolve()
    if not path.is_relative_to(base):
        return "outside the working directory"
    if not path.exists():
        return "missing"
    if not path.is_file():
        return "not a regular file"
    try:
        with path.open("rb") as handle:
            first = handle.read(1)
    except OSError as error:
        return f"not readable ({error.strerror or error})"
    return "" if first else "empty"


def prestep_verdict(
    root: Path,
    result: ImplementationResult,
    config: ProjectConfig = DEFAULT_CONFIG,
    protected: Sequence[str] = (),
) -> QAVerdict | None:
    """Return QA's failing verdict from the file checks, or None to ask the LLM.

    ``protected`` are the files the task changed or deleted that the
    milestone's verification protects (``roles.projects.verification``): the
    tests its "done" is judged by are never the task's to change, whichever
    way it changed them.
    """
    problems = [
        f"{name}: a verification file of the milestone, which no task may change"
        for name in protected
    ]
    problems += check_reported_files(root, result.files)
    if not problems:
        return None
    feedback = clip(
        "Files check failed: " + "; ".join(problems), config.qa_feedback_chars
    )
    return QAVerdict(passed=False, feedback=feedback, issues=problems)


def regression_verdict(
    broken: Sequence[str], config: ProjectConfig = DEFAULT_CONFIG
) -> QAVerdict | None:
    """Return QA's failing verdict for a task that broke a verification command
    passing at the last commit (``verification.regressions``), or None.

    Such work is never committed, whatever the model would judge: the next
    task would build on it, and the milestone's "done" could no longer pass.
    """
    if not broken:
        return None
    feedback = clip(
        "Verification broken by this task: " + "; ".join(broken),
        config.qa_feedback_chars,
    )
    return QAVerdict(passed=False, feedback=feedback, issues=list(broken))


def failed_run_verdict(
    result: ImplementationResult, config: ProjectConfig = DEFAULT_CONFIG
) -> QAVerdict:
    """Return the failing verdict of a Run that gave up, without asking QA.

    A task whose Run abandoned is a TaskPlanner retry like any QA failure; its
    own summary is the feedback the retry needs.
    """
    summary = result.result_summary or "no summary"
    feedback = clip(f"The task's run gave up: {summary}", config.qa_feedback_chars)
    return QAVerdict(passed=False, feedback=feedback, issues=["run abandoned"])


def skipped_retry_verdict(config: ProjectConfig = DEFAULT_CONFIG) -> QAVerdict:
    """Return the failing verdict of a skip planned on a task's retry.

    A retry comes after the task's last attempt was discarded: the repository
    is back where the TaskPlanner judged the task needed, so its work cannot
    be there. Such a skip is a failed attempt, not a done task.
    """
    feedback = clip(
        "A skip is not done work: this task's last attempt was discarded, so the "
        "repository is where the task was planned as needed. Plan the task "
        "again (implement), or abort it.",
        config.qa_feedback_chars,
    )
    return QAVerdict(passed=False, feedback=feedback, issues=["skip on a retry"])


def escalate(
    trigger: Trigger,
    *,
    milestone_index: int,
    task_id: str | None = None,
    detail: str = "",
    config: ProjectConfig = DEFAULT_CONFIG,
) -> EscalationEvent:
    """Return the escalation event of ``trigger``, filed under its tier.

    Tier 1: QA failed, the TaskPlanner re-plans. Tier 2: the task is infeasible
    (aborted, or out of attempts), the Assessor evaluates. Tier 3: the Assessor
    found drift (a hint) or divergence (a re-scope).
    """
    return EscalationEvent(
        tier=TIERS[trigger],
        trigger=trigger,
        milestone_index=milestone_index,
        task_id=task_id,
        detail=clip(detail, config.escalation_chars),
    )
