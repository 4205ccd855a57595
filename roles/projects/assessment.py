"""What a project does with the Assessor's verdict, one ``step`` of the machine.

The next milestone, the end report (complete only when some task changed a
file), a re-scope by the ScopeAgent (failed after ``max_rescopes``), or the
TaskPlanner steered by the Assessor's correction hint. A "done" claim refused
``max_claims`` times in a row is taken as a major divergence.
"""

from __future__ import annotations

from typing import Any

from roles.projects.config import ProjectConfig
from roles.projects.contracts import AssessorVerdict
from roles.projects.events import FinishProject, RecordEscalation
from roles.projects.routing import after_assessor, escalate
from roles.projects.state import (
    ProjectState,
    Result,
    ask_scope_agent,
    ask_task_planner,
    update,
)
from roles.projects.window import Window, clear_carry_forward


def on_assessor(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    """Return the state after the Assessor's verdict and the actions to carry out."""
    verdict: AssessorVerdict = event.verdict
    state = update(state, tasks_since_review=0, correction_hint="")
    route = after_assessor(verdict, state.milestone_index, len(state.milestones))
    if route == "next_milestone":
        state = update(
            state,
            milestone_index=state.milestone_index + 1,
            window=Window(),
            claims=0,
            skips=0,
        )
        return ask_task_planner(state)
    if route == "report":
        return _report(state)
    if route == "scope_agent":
        return _rescope(state, verdict, config)
    if state.claims >= config.max_claims:
        return _rescope(state, _refused_claims(state, verdict, config), config)
    if verdict.verdict == "aligned":
        # A refused "done" claim: the hint is why, so the TaskPlanner hears it.
        hint = verdict.correction_hint if state.claims else ""
        return ask_task_planner(update(state, correction_hint=hint))
    problem = escalate(
        "minor_drift",
        milestone_index=state.milestone_index,
        detail=verdict.correction_hint,
        config=config,
    )
    window = clear_carry_forward(state.window)
    state = update(state, correction_hint=verdict.correction_hint, window=window)
    return ask_task_planner(state, (RecordEscalation(event=problem),))


def _report(state: ProjectState) -> Result:
    """End the project: complete only when some task's changed files passed QA.

    Skips are the TaskPlanner's word that the work is there; when every task
    was skipped, the repository shows none of the request's work, and
    "complete" would be a claim without evidence.
    """
    count = len(state.milestones)
    if not state.changed_tasks:
        done = state.completed_tasks
        skipped = f"all {done} tasks done were skips" if done else "no task was done"
        reason = (
            f"the Assessor judged the {count} milestone(s) complete, but no task "
            f"changed a file ({skipped}): the repository shows none of the "
            "request's work"
        )
        finish = FinishProject(status="failed", reason=reason)
        return update(state, phase="failed", awaiting=""), [finish]
    done = f"all {count} milestone{'s' if count != 1 else ''} complete"
    finish = FinishProject(status="complete", reason=done)
    return update(state, phase="complete", awaiting=""), [finish]


def _refused_claims(
    state: ProjectState, verdict: AssessorVerdict, config: ProjectConfig
) -> AssessorVerdict:
    """Return the divergence of a milestone whose "done" claim keeps being refused."""
    why = verdict.correction_hint or verdict.divergence_analysis
    analysis = (
        f"The TaskPlanner claimed milestone {state.milestone_index + 1} done "
        f"{state.claims} times in a row and the Assessor refused each claim"
        + (f": {why}" if why else ".")
    )
    text = analysis[: config.divergence_chars]
    return AssessorVerdict(verdict="major_divergence", divergence_analysis=text)


def _rescope(
    state: ProjectState, verdict: AssessorVerdict, config: ProjectConfig
) -> Result:
    analysis = verdict.divergence_analysis
    problem = escalate(
        "major_divergence",
        milestone_index=state.milestone_index,
        detail=analysis,
        config=config,
    )
    actions = (RecordEscalation(event=problem),)
    if state.rescopes >= config.max_rescopes:
        reason = f"still diverging after {state.rescopes} re-scopes: {analysis}"
        finish = FinishProject(status="failed", reason=reason)
        return update(state, phase="failed", awaiting=""), [*actions, finish]
    state = update(state, rescopes=state.rescopes + 1, claims=0, skips=0)
    return ask_scope_agent(state, analysis, actions)
