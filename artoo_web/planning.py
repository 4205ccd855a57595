"""R2 on the bus: ask memory, plan, and dispatch the plan in sequence groups."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from artoo_web import bus, runtime
from artoo_web.env import envint
from artoo_web.models import BusMessage, Run, RunStatus
from roles import planner
from roles.contracts import (
    DispatchManifest,
    FinalResult,
    MemoryRecall,
    PlanDirective,
    SubTaskOutcome,
    TaskSpec,
)
from roles.llm import LLMCancelled

log = logging.getLogger(__name__)


def memory_timeout_s() -> int:
    return envint("ARTOO_MEMORY_TIMEOUT_S", 5, minimum=1)


def fanin_deadline_s() -> int:
    return envint("ARTOO_FANIN_DEADLINE_S", 300, minimum=1)


@bus.handler("R2", "TaskSpec")
@bus.handler("R2", "PlanDirective")
def query_memory(msg: BusMessage) -> None:
    """Ask R5 for calibration; plan without it if memory does not answer in time."""
    from artoo_web.tasks import plan_without_memory

    run = Run.objects.select_for_update().get(id=msg.run_id)
    if run.is_terminal or msg.round != run.round:
        return
    if msg.type == "PlanDirective":
        run.state["directive"] = msg.payload
        run.status = RunStatus.REPLANNING
        run.save(update_fields=["state", "status", "updated_at"])
    bus.send(run, "R2", "R5", "MemoryQuery", {"task_id": run.task_id or "task"})
    runtime.later(
        plan_without_memory, [str(run.id), run.round], countdown=memory_timeout_s()
    )


@bus.handler("R2", "MemoryRecall", self_committing=True)
def plan_with_recall(msg: BusMessage) -> None:
    recall = MemoryRecall.model_validate(msg.payload)
    # Delivered with the plan, not before it: a worker that dies while planning
    # leaves the recall undelivered, and the sweeper hands it to another worker.
    plan_round(msg.run_id, msg.round, recall, msg)


def plan_round(
    run_id, round_: int, recall: MemoryRecall | None, msg: BusMessage | None = None
) -> str:
    """Plan one round once: the first of recall or memory timeout claims it.

    A recall redelivered after its worker died may take over its own claim.
    """
    claimant = msg.id if msg is not None else "timeout"
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        if run.is_terminal or run.round != round_:
            bus.mark_delivered(msg)
            return "stale"
        planned = run.state.get("planned_round", -1) >= round_
        if planned and run.state.get("planned_by") != claimant:
            bus.mark_delivered(msg)
            return "already-planned"
        run.state["planned_round"] = round_
        run.state["planned_by"] = claimant
        run.save(update_fields=["state", "updated_at"])
    if recall is None:
        runtime.trace(run, "R2", "memory_unavailable", round=round_)
        recall = MemoryRecall(
            task_id=run.task_id or "task",
            space=f"intent:{run.task_id or 'task'}",
            entity="env:local",
            available=False,
        )
    dispatch(run, recall, msg)
    return "planned"


def dispatch(run: Run, recall: MemoryRecall, msg: BusMessage | None = None) -> None:
    """Call R2, then send the manifest and every SubTask in one transaction."""
    spec = TaskSpec.model_validate(run.state["spec"])
    directive = run.state.get("directive")
    previous = [
        SubTaskOutcome.model_validate(o)
        for o in run.state.get("fanin", {}).get("outcomes", {}).values()
    ]
    try:
        result = planner.plan(
            spec,
            model=runtime.model_for("R2", run),
            recall=recall,
            directive=PlanDirective.model_validate(directive) if directive else None,
            previous_outcomes=previous,
            today=runtime.today(),
            id_factory=runtime.new_id,
            available_tools=available_tools(directive),
        )
    except LLMCancelled:
        return
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        bus.mark_delivered(msg)
        if run.is_terminal or run.state.get("fanin", {}).get("round") == run.round:
            return
        runtime.record_usage(run, "R2", result.usage)
        injected = set(result.calibration.injected_sops if result.calibration else [])
        run.state["injected_sops"] = [
            sop.model_dump(mode="json") for sop in recall.sops if sop.id in injected
        ]
        if result.calibration is not None:
            runtime.trace(
                run,
                "R2",
                "calibration",
                round=run.round,
                recall=recall.model_dump(mode="json"),
                text=result.calibration.text,
            )
        send_plan(run, spec, result)


def available_tools(directive: dict | None) -> list[str]:
    blocked = set((directive or {}).get("blocked_tools", []))
    return [t for t in planner_tools() if t not in blocked]


def planner_tools() -> tuple[str, ...]:
    return ("shell", "glob", "read_file", "write_file", "search", "fetch_url")


def send_plan(run: Run, spec: TaskSpec, result) -> None:
    subtasks = result.subtasks
    manifest = DispatchManifest(
        task_id=spec.task_id,
        subtask_ids=[s.subtask_id for s in subtasks],
        task_spec=spec,
        dispatched_at=timezone.now(),
        task_criteria=result.task_criteria,
        reason=result.error,
    )
    groups = sorted({s.sequence for s in subtasks})
    run.state["fanin"] = {
        "round": run.round,
        "subtask_ids": manifest.subtask_ids,
        "groups": {
            str(g): [s.subtask_id for s in subtasks if s.sequence == g] for g in groups
        },
        "order": groups,
        "released": groups[0] if groups else 0,
        "held": {},
        "outcomes": {},
        "evaluated": False,
        "dispatched_at": timezone.now().isoformat(),
    }
    run.status = RunStatus.RUNNING if subtasks else RunStatus.VALIDATING
    run.save(update_fields=["state", "status", "updated_at"])
    bus.send(run, "R2", "R4b", "DispatchManifest", manifest)
    for subtask in subtasks:
        bus.send(run, "R2", "R3", "SubTask", subtask)


def write_next_moves(run_id, final: FinalResult) -> None:
    """After an abandon, R2 says what was accomplished and what to try next."""
    run = Run.objects.get(id=run_id)
    spec = TaskSpec.model_validate(
        run.state.get("spec")
        or {
            "task_id": run.task_id or "task",
            "intent": run.raw_input[:200] or "task",
            "raw_input": run.raw_input,
        }
    )
    outcomes = [
        SubTaskOutcome.model_validate(o)
        for o in run.state.get("fanin", {}).get("outcomes", {}).values()
    ]
    if BusMessage.objects.filter(run=run, type="NextMoves").exists():
        return
    moves, usage = planner.next_moves(
        spec, final, outcomes, model=runtime.model_for("R2", run)
    )
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        runtime.record_usage(run, "R2", usage)
        if run.final_result is not None:
            run.final_result["next_moves"] = moves.model_dump(mode="json")
            run.save(update_fields=["final_result", "updated_at"])
        bus.send(run, "R2", "User", "NextMoves", moves)


def sweep_next_moves(older_than_s: int) -> int:
    """Ask R2 again for the next moves of abandoned runs that never got them."""
    from artoo_web.tasks import next_moves

    now = timezone.now()
    missing = (
        Run.objects.filter(
            status=RunStatus.FAILED,
            directive="abandon",
            finished_at__lt=now - timedelta(seconds=older_than_s),
            finished_at__gt=now - timedelta(hours=1),
        )
        .exclude(messages__type="NextMoves")
        .only("id", "final_result")
    )
    count = 0
    for run in missing[:100]:
        next_moves.apply_async(args=[str(run.id), run.final_result], queue="pipeline")
        count += 1
    return count
