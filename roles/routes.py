"""The route table of the bus: which role may send which message to which role.

One place names every legal ``(type, sender, recipient)``; the bus refuses
anything else and the Auditor flags it as a boundary violation.

A project's agents (``roles.projects``) are roles too: the Project (its state
machine) asks the ScopeAgent (``Scope``), the TaskPlanner (``TaskPlan``), QA
and the Assessor, and the Implementor (``Impl``), which runs each task as a
Run; their replies come back to the Project, its records go to the User.
"""

from __future__ import annotations

ROLES = ("User", "R1", "R2", "R3", "R4a", "R4b", "R5", "R6", "R7")
PROJECT_ROLES = ("Project", "Scope", "TaskPlan", "QA", "Assessor", "Impl")

PROJECT_ROUTES: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("AskScopeAgent", "Project", "Scope"),
        ("ScopeReply", "Scope", "Project"),
        ("AskTaskPlanner", "Project", "TaskPlan"),
        ("PlanReply", "TaskPlan", "Project"),
        ("DispatchTask", "Project", "Impl"),
        ("StopTask", "Project", "Impl"),
        ("RunReply", "Impl", "Project"),
        ("AskQA", "Project", "QA"),
        ("QAReply", "QA", "Project"),
        ("AskAssessor", "Project", "Assessor"),
        ("AssessorReply", "Assessor", "Project"),
        ("VerifyMilestone", "Project", "QA"),
        ("VerifyReply", "QA", "Project"),
        ("RecordVerification", "Project", "User"),
        ("Cancel", "User", "Project"),
        ("RecordDone", "Project", "User"),
        ("RecordEscalation", "Project", "User"),
        ("ResetTask", "Project", "User"),
        ("FinishProject", "Project", "User"),
    }
)

ROUTES: frozenset[tuple[str, str, str]] = (
    frozenset(
        {
            ("TaskSpec", "R1", "R2"),
            ("ClarificationRequest", "R1", "User"),
            ("ClarificationAnswer", "User", "R1"),
            ("DirectResponse", "R1", "User"),
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
        }
    )
    | PROJECT_ROUTES
)

MESSAGE_TYPES: frozenset[str] = frozenset(route[0] for route in ROUTES)


def is_on_route(type_: str, sender: str, recipient: str) -> bool:
    """Return True when the route table allows this message."""
    return (type_, sender, recipient) in ROUTES


# The fast loop (R3 ⇄ R4a) runs inside the executor's task; its messages are
# its record, sent as they happen, and no handler acts on them.
RECORD_ONLY: frozenset[tuple[str, str]] = frozenset(
    {("ExecutionResult", "R4a"), ("CorrectionSignal", "R3")}
)


def queue_for(recipient: str, type_: str = "") -> str | None:
    """Return the worker queue that delivers ``type_`` to ``recipient``, or None.

    Messages to the User and to the Auditor, and the fast loop's record
    (``RECORD_ONLY``), are delivered by publication: the dashboard and the
    Auditor tap the bus, so no worker runs a handler for them.
    """
    if recipient in ("User", "R6") or (type_, recipient) in RECORD_ONLY:
        return None
    if recipient == "R5":
        return "memory"
    return "pipeline"
