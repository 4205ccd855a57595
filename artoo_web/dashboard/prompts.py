"""The prompts: Law 1 approvals waiting for the operator, and R1's question."""

from __future__ import annotations

from artoo_web.models import Approval, ApprovalStatus, Run


def prompts_context(run: Run) -> dict:
    approvals = Approval.objects.filter(run=run).select_related("decided_by")
    approvals = list(approvals.order_by("created_at"))
    return {
        "pending_approvals": [
            a for a in approvals if a.status == ApprovalStatus.PENDING
        ],
        "decided_approvals": [
            a for a in approvals if a.status != ApprovalStatus.PENDING
        ],
        "question": (
            run.state.get("question", "") if run.status == "needs_input" else ""
        ),
        "needs_input": run.status == "needs_input",
    }
