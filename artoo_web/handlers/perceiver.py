"""R1 on the bus: perceive a run (first step, an answer, or a recovery)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from artoo_web import bus, projects, runtime, telemetry, topics
from artoo_web.handlers import memory
from artoo_web.models import BusMessage, Run, RunStatus
from roles import perceiver
from roles.claims.question import change_asked
from roles.llm.client import LLMCancelled

SESSION_RUNS = 5


def resume_perception(msg: BusMessage) -> None:
    """(R1, ClarificationAnswer): perceive again with the user's answer."""
    start(str(msg.run_id), msg)


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
    pairs = run.load_state().clarifications
    model = runtime.model_for("R1", run)
    try:
        result = perceiver.perceive(
            run.raw_input,
            model=model,
            session=session_of(run),
            memories=memory.global_memories(),
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
            state = run.load_state()
            state.spec = result.task_spec
            if run.project_id is not None:
                # A project's task is work on its repository: a change.
                asks = change_asked(state.spec.asks)
                state.spec = state.spec.model_copy(update={"asks": asks})
            run.keep_state(state)
            run.task_id = result.task_spec.task_id[:120]
            run.status = RunStatus.PLANNING
            run.save(update_fields=["task_id", "state", "status", "updated_at"])
            bus.send(run, "R1", "R2", "TaskSpec", state.spec)


def ask(run: Run, question: str, round_: int) -> None:
    state = run.load_state()
    state.question = question
    run.keep_state(state)
    run.status = RunStatus.NEEDS_INPUT
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
    # Not run.save(): the row's tokens and cost were just added in the database.
    run.save(
        update_fields=[
            "status",
            "directive",
            "finished_at",
            "final_result",
            "updated_at",
        ]
    )
    runtime.trace(run, "R1", "direct_answer", answer=answer)
    # The run ends here, so the answer is its last message: observers of the bus
    # (the run page, the CLI, the Auditor) learn of it like of a FinalResult.
    bus.send(
        run,
        "R1",
        "User",
        "DirectResponse",
        {"answer": answer, "raw_input": run.raw_input},
    )
    projects.run_ended(run)
    telemetry.run_ended(run)
