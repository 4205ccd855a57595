"""Scripted replies for the project state machine's tests."""

from roles.projects import new_project, step
from roles.projects.contracts import (
    AssessorVerdict,
    ImplementationResult,
    QAVerdict,
    Scope,
    TaskPlan,
)
from roles.projects.events import (
    AssessorReply,
    PlanReply,
    QAReply,
    RunReply,
    ScopeReply,
)

TWO = ["User can create colonies", "User can see colonies in the UI"]


def kinds(actions):
    return [a.kind for a in actions]


def scoped(milestones=TWO):
    state, _ = new_project("Add colony management")
    scope = Scope(remit="Colony management", milestones=milestones)
    return step(state, ScopeReply(request_id=state.awaiting, scope=scope))


def plan(state, action="implement", description="Colony model", **extra):
    fields = {"action": action, **extra}
    if action in ("implement", "skip"):
        fields["task_description"] = description
    if action == "implement":
        fields.setdefault("implementation_plan", f"PRP: {description}")
    return step(state, PlanReply(request_id=state.awaiting, plan=TaskPlan(**fields)))


def run(state, success=True, summary="Colony.gd created"):
    result = ImplementationResult(
        files=["Colony.gd"], result_summary=summary, success=success
    )
    return step(state, RunReply(request_id=state.awaiting, result=result))


def qa(state, passed=True, feedback="name field missing"):
    verdict = QAVerdict(passed=passed, feedback="" if passed else feedback)
    return step(state, QAReply(request_id=state.awaiting, verdict=verdict))


def assess(state, verdict="aligned", **extra):
    reply = AssessorVerdict(verdict=verdict, **extra)
    return step(state, AssessorReply(request_id=state.awaiting, verdict=reply))


def one_task(state, description="Colony model"):
    """Plan, run and pass one task; return the state and QA's actions."""
    state, _ = plan(state, description=description)
    state, _ = run(state)
    return qa(state)


def completed(state, count):
    """Complete ``count`` tasks; return the state and each task's last actions."""
    seen = []
    for n in range(count):
        state, actions = one_task(state, f"task {n}")
        seen.append(kinds(actions))
    return state, seen
