"""What a project does with the Assessor's verdict, one ``step`` of the machine.

The next milestone, the end report (complete only when some task changed a
file), a re-scope by the ScopeAgent (failed after ``max_rescopes``), or the
TaskPlanner steered by the Assessor's correction hint. A "done" claim refused
``max_claims`` times in a row is taken as a major divergence.

A ``milestone_complete`` verdict is not the milestone done: its verification
commands run at the last commit first (``on_verify``), and only when each
passes does the project move on or end complete. A failure, or a milestone
with no command, is a refused claim: recorded, sent to the TaskPlanner as the
hint, and counted toward ``max_claims``.
"""

from __future__ import annotations

from typing import Any

from roles.projects.config import ProjectConfig
from roles.projects.contracts import AssessorVerdict, clip
from roles.projects.events import (
    Action,
    FinishProject,
    RecordEscalation,
    RecordVerification,
)
from roles.projects.routing import after_assessor, escalate
from roles.projects.state import (
    ProjectState,
    Result,
    ask_scope_agent,
    ask_task_planner,
    ask_verify,
    update,
)
from roles.projects.verification import no_command, refusal
from roles.projects.window import Window, clear_carry_forward


def on_assessor(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    """Return the state after the Assessor's verdict and the actions to carry out."""
    verdict: AssessorVerdict = event.verdict
    state = update(state, tasks_since_review=0, correction_hint="")
    route = after_assessor(verdict, state.milestone_index, len(state.milestones))
    if route in ("next_milestone", "report"):
        if not state.commands():
            number = state.milestone_index + 1
            record = RecordVerification(
                milestone_index=state.milestone_index,
                passed=False,
                reason=no_command(number),
            )
            return _refused(state, record, config)
        return ask_verify(state)
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


def on_verify(state: ProjectState, event: Any, config: ProjectConfig) -> Result:
    """Return the state after the milestone's commands ran at the last commit:
    the milestone done when each passed, else a refused claim."""
    commands = state.commands()
    reason = refusal(state.milestone_index + 1, commands, event.results, event.commit)
    record = RecordVerification(
        milestone_index=state.milestone_index,
        commit=event.commit,
        results=event.results,
        passed=not reason,
        reason=reason or f"all {len(commands)} verification command(s) passed",
    )
    if reason:
        return _refused(state, record, config)
    if state.milestone_index + 1 >= len(state.milestones):
        return _report(state, (record,))
    state = update(
        state,
        milestone_index=state.milestone_index + 1,
        window=Window(),
        claims=0,
        skips=0,
    )
    return ask_task_planner(state, (record,))


def _refused(
    state: ProjectState, record: RecordVerification, config: ProjectConfig
) -> Result:
    """Return a "done" the verification refused: the reason recorded and sent
    to the TaskPlanner as its hint; ``max_claims`` of them go to the ScopeAgent
    (which can name the commands a milestone lacks)."""
    state = update(state, claims=max(state.claims, 1))
    if state.claims >= config.max_claims:
        why = AssessorVerdict(verdict="aligned", correction_hint=record.reason)
        divergence = _refused_claims(state, why, config)
        return _rescope(state, divergence, config, (record,))
    hint = clip(f"Not done: {record.reason}", config.correction_hint_chars)
    return ask_task_planner(update(state, correction_hint=hint), (record,))


def _report(state: ProjectState, actions: tuple[Action, ...] = ()) -> Result:
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
        return update(state, phase="failed", awaiting=""), [*actions, finish]
    done = f"all {count} milestone{'s' if count != 1 else ''} complete"
    finish = FinishProject(status="complete", reason=done)
    return update(state, phase="complete", awaiting=""), [*actions, finish]


def _refused_claims(
    state: ProjectState, verdict: AssessorVerdict, config: ProjectConfig
) -> AssessorVerdict:
    """Return the divergence of a milestone whose "done" claim keeps being refused."""
    why = verdict.correction_hint or verdict.divergence_analysis
    analysis = (
        f"The TaskPlanner claimed milestone {state.milestone_index + 1} done "
        f"{state.claims} times in a row and each claim was refused"
        + (f": {why}" if why else ".")
    )
    text = analysis[: config.divergence_chars]
    return AssessorVerdict(verdict="major_divergence", divergence_analysis=text)


def _rescope(
    state: ProjectState,
    verdict: AssessorVerdict,
    config: ProjectConfig,
    before: tuple[Action, ...] = (),
) -> Result:
    analysis = verdict.divergence_analysis
    problem = escalate(
        "major_divergence",
        milestone_index=state.milestone_index,
        detail=analysis,
        config=config,
    )
    actions = (*before, RecordEscalation(event=problem))
    if state.rescopes >= config.max_rescopes:
        reason = f"still diverging after {state.rescopes} re-scopes: {analysis}"
        finish = FinishProject(status="failed", reason=reason)
        return update(state, phase="failed", awaiting=""), [*actions, finish]
    state = update(state, rescopes=state.rescopes + 1, claims=0, skips=0)
    return ask_scope_agent(state, analysis, actions)
