"""The run's life outside the roles: submit, perceive (R1), answer, approve, cancel.

Handlers load, call the role, persist and send; every decision is the role's.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from artoo_web import bus, redisconn, runtime, topics
from artoo_web.env import envint
from artoo_web.models import (
    Approval,
    ApprovalStatus,
    BusMessage,
    Run,
    RunStatus,
    TraceEvent,
)
from roles import ggs, perceiver, routes
from roles.contracts import FinalResult, Loss
from roles.llm import LLMCancelled

log = logging.getLogger(__name__)

SESSION_RUNS = 5
CANCEL_FLAG_TTL_S = 86_400


class Conflict(Exception):
    """The run is not in a state that allows this operation."""


def submit(owner, raw_input: str) -> Run:
    """Create a queued run and enqueue its first step on commit."""
    with transaction.atomic():
        run = Run.objects.create(owner=owner, raw_input=raw_input)
        TraceEvent.objects.create(
            run=run, role="User", kind="submitted", data={"chars": len(raw_input)}
        )
        transaction.on_commit(lambda: enqueue_start(run.id))
    return run


def enqueue_start(run_id) -> None:
    """Enqueue a run's first step; if the broker is away, the sweeper retries."""
    from artoo_web.tasks import start_run

    try:
        start_run.apply_async(args=[str(run_id)], queue="pipeline")
    except Exception:
        log.warning(
            "run %s: start not enqueued; the sweeper will", run_id, exc_info=True
        )


def start(run_id: str, msg: BusMessage | None = None) -> str:
    """Let R1 perceive a run (first step, answer, or recovery), once at a time."""
    lease = bus.Lease(topics.perception_lease_key(run_id))
    if not lease.acquire():
        return "busy"
    try:
        with transaction.atomic():
            run = Run.objects.select_for_update().filter(id=run_id).first()
            if run is None:
                return "missing"
            # Holding the lease, a run still perceiving was left by a dead worker.
            if run.status not in (RunStatus.QUEUED, RunStatus.PERCEIVING):
                bus.mark_delivered(msg)
                return "already-started"
            run.status = RunStatus.PERCEIVING
            run.save(update_fields=["status", "updated_at"])
        perceive(run, msg)
        return "started"
    finally:
        lease.release()


def restart_stalled(older_than_s: int) -> int:
    """Re-enqueue runs whose first step was lost (an enqueue or a worker died)."""
    from artoo_web.tasks import start_run

    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    stalled = Run.objects.filter(
        status__in=(RunStatus.QUEUED, RunStatus.PERCEIVING), updated_at__lt=cutoff
    ).exclude(messages__type="ClarificationAnswer", messages__delivered_at=None)
    count = 0
    for run_id in stalled.values_list("id", flat=True)[:100]:
        if not bus.is_leased(topics.perception_lease_key(run_id)):
            start_run.apply_async(args=[str(run_id)], queue="pipeline")
            count += 1
    return count


def session_of(run: Run) -> list[perceiver.SessionEntry]:
    """Return the user's last runs before this one, oldest first."""
    earlier = (
        Run.objects.filter(owner_id=run.owner_id, created_at__lt=run.created_at)
        .exclude(final_result=None)
        .order_by("-created_at")[:SESSION_RUNS]
    )
    return [
        perceiver.SessionEntry(
            input=r.raw_input, result=r.final_result.get("summary", "")
        )
        for r in reversed(earlier)
    ]


def perceive(run: Run, msg: BusMessage | None = None) -> None:
    """Run R1 and send its TaskSpec, question, or direct answer.

    ``msg`` (a ClarificationAnswer) is marked delivered with R1's output, so a
    worker that dies while perceiving leaves it for the sweeper.
    """
    pairs = [tuple(pair) for pair in run.state.get("clarifications", [])]
    model = runtime.model_for("R1", run)
    try:
        result = perceiver.perceive(
            run.raw_input,
            model=model,
            session=session_of(run),
            clarifications=pairs,
            today=runtime.today(),
        )
    except LLMCancelled:
        return
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        bus.mark_delivered(msg)
        if run.is_terminal:
            return
        runtime.record_usage(run, "R1", result.usage)
        if result.kind == "question":
            ask(run, result.question, len(pairs) + 1)
        elif result.kind == "direct":
            answer_directly(run, result.answer)
        else:
            run.task_id = result.task_spec.task_id[:120]
            run.state["spec"] = result.task_spec.model_dump(mode="json")
            run.status = RunStatus.PLANNING
            run.save(update_fields=["task_id", "state", "status", "updated_at"])
            bus.send(run, "R1", "R2", "TaskSpec", result.task_spec)


def ask(run: Run, question: str, round_: int) -> None:
    run.status = RunStatus.NEEDS_INPUT
    run.state["question"] = question
    run.save(update_fields=["status", "state", "updated_at"])
    bus.send(
        run,
        "R1",
        "User",
        "ClarificationRequest",
        {"question": question, "round": round_, "raw_input": run.raw_input},
    )


def answer_directly(run: Run, answer: str) -> None:
    """Finish a conversational run with R1's direct answer (no pipeline)."""
    run.status = RunStatus.DONE
    run.directive = "direct"
    run.finished_at = timezone.now()
    run.final_result = {"summary": answer, "output": answer, "directive": "direct"}
    run.save()
    runtime.trace(run, "R1", "direct_answer", answer=answer)


def answer_clarification(run: Run, answer: str) -> BusMessage:
    """Send the user's answer to R1; an empty answer means proceed."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        if run.status != RunStatus.NEEDS_INPUT:
            raise Conflict("This run is not waiting for an answer.")
        pairs = run.state.setdefault("clarifications", [])
        pairs.append([run.state.pop("question", ""), answer])
        run.status = RunStatus.PERCEIVING
        run.save(update_fields=["status", "state", "updated_at"])
        return bus.send(
            run,
            "User",
            "R1",
            "ClarificationAnswer",
            {"answer": answer, "round": len(pairs)},
        )


@bus.handler("R1", "ClarificationAnswer", self_committing=True)
def resume_perception(msg: BusMessage) -> None:
    start(str(msg.run_id), msg)


def decide_approval(run: Run, approval_id, decision: str, user) -> Approval:
    """Record the operator's decision on a pending approval of this run."""
    if decision not in ("approve", "deny"):
        raise ValueError("decision must be 'approve' or 'deny'")
    with transaction.atomic():
        approval = (
            Approval.objects.select_for_update().filter(run=run, id=approval_id).first()
        )
        if approval is None:
            raise Approval.DoesNotExist("No such approval for this run.")
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(f"This approval was already {approval.status}.")
        approval.status = (
            ApprovalStatus.APPROVED if decision == "approve" else ApprovalStatus.DENIED
        )
        approval.decided_by = user
        approval.decided_at = timezone.now()
        approval.save()
        bus.send(
            run,
            "User",
            "R3",
            "ApprovalDecision",
            {"approval_id": str(approval.id), "decision": decision},
        )
    return approval


@bus.handler("R3", "ApprovalDecision")
def note_decision(msg: BusMessage) -> None:
    """The waiting executor reads the Approval row; the message is the record."""


def cancel(run: Run) -> FinalResult:
    """Cancel a run: stop its work, deny its approvals, record the FinalResult."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        if run.is_terminal:
            raise Conflict(f"The run is already {run.status}.")
        Approval.objects.filter(run=run, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.DENIED, decided_at=timezone.now()
        )
        final = abandon(
            run,
            "Cancelled by the operator before the run finished.",
            "cancelled",
            RunStatus.CANCELLED,
        )
        transaction.on_commit(lambda: raise_cancel_flag(run.id))
    return final


def raise_cancel_flag(run_id) -> None:
    try:
        redisconn.client().set(topics.cancel_key(run_id), "1", ex=CANCEL_FLAG_TTL_S)
    except Exception:
        log.warning("cancel flag for run %s not set in Redis", run_id, exc_info=True)


def abandon(run: Run, summary: str, rationale: str, status: str) -> FinalResult:
    """End a locked run from outside the loop with GGS's abandon FinalResult."""
    last = run.state.get("loss")
    final = ggs.forced_abandon(
        ggs.GGSState.from_dict(run.ggs_state or {}),
        run.task_id or "run",
        summary,
        rationale,
        Loss.model_validate(last) if last else None,
    )
    finish(run, final, status)
    bus.send(run, "R7", "User", "FinalResult", final)
    return final


def finish(run: Run, final: FinalResult, status: str) -> None:
    """Store the FinalResult and the cost per role on the run, and end it."""
    from artoo_web.summaries import usage_by_role

    run.state["cost_by_role"] = usage_by_role(run)
    run.final_result = final.model_dump(mode="json")
    run.directive = final.directive
    run.status = status
    run.finished_at = timezone.now()
    run.save()
    transaction.on_commit(lambda: runtime.discard_sandbox_state(run.id))


def handler_attempts() -> int:
    return envint("ARTOO_HANDLER_ATTEMPTS", 3, minimum=1)


def handler_failed(message_id: int, exc: Exception) -> str:
    """Record a handler's error; retry with backoff, then end the run clearly."""
    from artoo_web.tasks import deliver

    msg = BusMessage.objects.filter(id=message_id).first()
    if msg is None or msg.run_id is None:
        log.exception("bus: handler of message %s failed", message_id)
        return "error"
    error = f"{type(exc).__name__}: {exc}"[:2000]
    log.error("bus: %s handler of message %s failed: %s", msg.recipient, msg.id, error)
    TraceEvent.objects.create(
        run_id=msg.run_id,
        role=msg.recipient,
        kind="handler_error",
        data={"message_id": msg.id, "type": msg.type, "error": error},
    )
    failures = TraceEvent.objects.filter(
        run_id=msg.run_id, kind="handler_error", data__message_id=msg.id
    ).count()
    if failures < handler_attempts():
        deliver.apply_async(
            args=[msg.id],
            countdown=2 ** (failures - 1),
            queue=routes.queue_for(msg.recipient) or "pipeline",
        )
        return "retrying"
    give_up(msg, error)
    return "failed"


def give_up(msg: BusMessage, error: str) -> None:
    """End a run whose handler keeps failing: the error becomes its FinalResult."""
    with transaction.atomic():
        BusMessage.objects.filter(id=msg.id).update(delivered_at=timezone.now())
        run = Run.objects.select_for_update().get(id=msg.run_id)
        if run.is_terminal:
            return
        run.error = error
        abandon(
            run,
            f"Abandoned: {msg.recipient} could not handle {msg.type} "
            f"after {handler_attempts()} attempts ({error}).",
            "handler error",
            RunStatus.FAILED,
        )
