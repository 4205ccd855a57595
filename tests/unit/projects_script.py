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
    VerifyReply,
)
from roles.projects.verification import CommandResult

TWO = ["User can create colonies", "User can see colonies in the UI"]
CHECK = "sh tests/colonies.sh"


def kinds(actions):
    return [a.kind for a in actions]


def scoped(milestones=TWO, verify=(CHECK,)):
    """Return the project scoped into ``milestones``, each verified by ``verify``."""
    state, _ = new_project("Add colony management")
    milestones = [
        {"description": m, "verify": list(verify)} if isinstance(m, str) else m
        for m in milestones
    ]
    scope = Scope(remit="Colony management", milestones=milestones)
    return step(state, ScopeReply(request_id=state.awaiting, scope=scope))


def verified(state, exit_code=0, output="ok", commit="c0ffee"):
    """Answer the milestone's VerifyMilestone: each command exits ``exit_code``."""
    results = [
        CommandResult(command=c, exit_code=exit_code, output=output)
        for c in state.commands()
    ]
    reply = VerifyReply(request_id=state.awaiting, commit=commit, results=results)
    return step(state, reply)


def accepted(state, exit_code=0):
    """The Assessor judges the milestone complete and its commands run."""
    state, actions = assess(state, "milestone_complete")
    assert [a.kind for a in actions] == ["verify_milestone"]
    return verified(state, exit_code)


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
