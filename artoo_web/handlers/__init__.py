"""Which function handles which bus message: the one table, beside ``roles.routes``.

One module per role, named as in ``roles/``: perceiver (R1), planner (R2),
executor (R3 ⇄ R4a, with the dispatcher that holds later sequence groups),
meta_validator (R4b), ggs (R7), memory (R5), and projects (a project's
Project, Scope, TaskPlan, QA, Assessor and Impl roles). Each handler is a few
lines around a pure call. Only ``artoo_web.tasks`` imports this package;
handlers enqueue follow-up work through ``artoo_web.followups``.

A self-committing handler opens ``bus.delivering(msg)`` itself, around its
persistence only, so a long model or tool call holds no transaction.
"""

from artoo_web.bus import Registration, Table
from artoo_web.handlers import (
    executor,
    ggs,
    memory,
    meta_validator,
    perceiver,
    planner,
    projects,
)

# The Project steps its state machine on every reply; an agent's model call
# holds no transaction.
PROJECT_HANDLERS: Table = {
    **{
        ("Project", type_): Registration(projects.advance, self_committing=False)
        for type_ in (
            "ScopeReply",
            "PlanReply",
            "RunReply",
            "QAReply",
            "AssessorReply",
            "VerifyReply",
            "Cancel",
        )
    },
    ("Scope", "AskScopeAgent"): Registration(projects.scope, self_committing=True),
    ("TaskPlan", "AskTaskPlanner"): Registration(projects.plan, self_committing=True),
    ("QA", "AskQA"): Registration(projects.qa, self_committing=True),
    ("Assessor", "AskAssessor"): Registration(projects.assess, self_committing=True),
    ("QA", "VerifyMilestone"): Registration(projects.verify, self_committing=True),
    ("Impl", "DispatchTask"): Registration(projects.dispatch, self_committing=False),
    ("Impl", "StopTask"): Registration(projects.stop, self_committing=False),
}

HANDLERS: Table = {
    ("R1", "ClarificationAnswer"): Registration(
        perceiver.resume_perception, self_committing=True
    ),
    ("R2", "TaskSpec"): Registration(planner.query_memory, self_committing=False),
    ("R2", "PlanDirective"): Registration(planner.query_memory, self_committing=False),
    ("R2", "MemoryRecall"): Registration(
        planner.plan_with_recall, self_committing=True
    ),
    ("R3", "SubTask"): Registration(executor.run_subtask, self_committing=True),
    ("R4a", "ExecutionResult"): Registration(
        executor.note_fast_loop, self_committing=False
    ),
    ("R3", "CorrectionSignal"): Registration(
        executor.note_fast_loop, self_committing=False
    ),
    ("R3", "ApprovalDecision"): Registration(
        executor.note_decision, self_committing=True
    ),
    ("R4b", "DispatchManifest"): Registration(
        meta_validator.arm_deadline, self_committing=False
    ),
    ("R4b", "SubTaskOutcome"): Registration(
        meta_validator.collect_outcome, self_committing=False
    ),
    ("R7", "ReplanRequest"): Registration(ggs.solve, self_committing=False),
    ("R7", "OutcomeSummary"): Registration(ggs.solve, self_committing=False),
    ("R5", "MemoryQuery"): Registration(memory.answer_query, self_committing=False),
    ("R5", "Megram"): Registration(memory.write_megram, self_committing=False),
    **PROJECT_HANDLERS,
}
