"""Evidence and attempts for the claims engine's tests: a shell call as the
executor records it, and the first evidence rule an answer fails."""

from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import evidence_finding
from roles.claims.question import Question
from roles.contracts import ExecutionResult, SubTask


def shell(command: str, output: str) -> str:
    """Return the evidence of a shell call that exited 0 with ``output``."""
    return format_evidence("shell", {"command": command}, f"[exit code 0]\n{output}")


def finding(request: str, claim: str, *calls: str, question: Question):
    """Return the first evidence rule a subtask of ``request`` fails when it
    claims ``claim`` after ``calls``, or None."""
    subtask = SubTask(
        subtask_id="s1",
        parent_task_id="t1",
        intent=request,
        success_criteria=["the answer names them"],
    )
    result = ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=list(calls)
    )
    return evidence_finding(subtask, result, request, question)
