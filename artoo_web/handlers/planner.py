"""R2 on the bus: ask memory, plan, dispatch the plan; next moves after abandon."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from artoo_web import bus, followups, runtime
from artoo_web.models import BusMessage, Run, RunStatus
from artoo_web.runs import lock_current
from roles import planner
from roles.claims.question import question_for
from roles.contracts import (
    DispatchManifest,
    FinalResult,
    MemoryQuery,
    MemoryRecall,
    PlanDirective,
    TaskSpec,
)
from roles.llm.client import LLMCancelled
from roles.runstate import FanIn
from roles.tools import TOOL_SPECS
from roles.tools.specs import not_offered


def query_memory(msg: BusMessage) -> None:
    """(R2, TaskSpec | PlanDirective): ask R5 for calibration, with a timeout."""
    run = lock_current(msg.run_id, msg.round)
    if run is None:
        return
    state = run.load_state()
    if msg.type == "PlanDirective":
        state.directive = PlanDirective.model_validate(msg.payload)
        run.keep_state(state)
        run.status = RunStatus.REPLANNING
        run.save(update_fields=["state", "status", "updated_at"])
    bus.send(run, "R2", "R5", "MemoryQuery", memory_query(run, state))
    followups.later(
        followups.PLAN_WITHOUT_MEMORY,
        [str(run.id), run.round],
        countdown=settings.ARTOO_MEMORY_TIMEOUT_S,
    )


def memory_query(run: Run, state) -> MemoryQuery:
    """Return R2's query: the task's pair, its intent and the round's tools."""
    blocked_tools, _ = state.blocked()
    return MemoryQuery(
        task_id=run.task_id or "task",
        intent=state.spec.intent if state.spec else "",
        tools=[t for t in tool_names(run) if t not in blocked_tools],
    )


def tool_names(run: Run) -> list[str]:
    """Return the tools R3 may be offered in this run: built-in (less those
    its request's kind of answer is not offered), then MCP."""
    spec = run.load_state().spec
    answer = question_for(spec.asks if spec else None, run.raw_input).answer
    offered = [t for t in TOOL_SPECS if t not in not_offered(answer)]
    return [*offered, *(tool.qualified for tool in runtime.run_mcp_tools(run))]


def plan_with_recall(msg: BusMessage) -> None:
    """(R2, MemoryRecall): plan the round with what memory returned."""
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
        run = lock_current(run_id, round_)
        if run is None:
            bus.mark_delivered(msg)
            return "stale"
        state = run.load_state()
        if not state.claim_planning(round_, claimant):
            bus.mark_delivered(msg)
            return "already-planned"
        run.keep_state(state)
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
    state = run.load_state()
    blocked_tools, _ = state.blocked()
    off = {*blocked_tools, *runtime.unavailable_tools()}
    try:
        result = planner.plan(
            state.spec,
            model=runtime.model_for("R2", run),
            recall=recall,
            directive=state.directive,
            previous_outcomes=state.previous_outcomes(),
            today=runtime.today(),
            id_factory=runtime.new_id,
            available_tools=[t for t in tool_names(run) if t not in off],
        )
    except LLMCancelled:
        return
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        bus.mark_delivered(msg)
        state = run.load_state()
        if run.is_terminal or state.fanin_of(run.round):
            return
        runtime.record_usage(run, "R2", result.usage)
        calibration = result.calibration
        injected = set(calibration.injected_sops if calibration else [])
        state.injected_sops = [sop for sop in recall.sops if sop.id in injected]
        state.keep_examples(
            recall.recent, calibration.injected_examples if calibration else []
        )
        state.memory_targets = list(recall.targets)
        if recall.related:
            runtime.trace(
                run,
                "R2",
                "memory_related",
                round=run.round,
                related=[r.model_dump(mode="json") for r in recall.related],
            )
        if result.notes:
            runtime.trace(run, "R2", "plan_notes", round=run.round, notes=result.notes)
        if result.calibration is not None:
            runtime.trace(
                run,
                "R2",
                "calibration",
                round=run.round,
                recall=recall.model_dump(mode="json"),
                text=result.calibration.text,
            )
        send_plan(run, state, result)


def send_plan(run: Run, state, result) -> None:
    subtasks = result.subtasks
    now = timezone.now()
    manifest = DispatchManifest(
        task_id=state.spec.task_id,
        subtask_ids=[s.subtask_id for s in subtasks],
        task_spec=state.spec,
        dispatched_at=now,
        task_criteria=result.task_criteria,
        reason=result.error,
    )
    state.fanin = FanIn.for_plan(run.round, subtasks, now)
    run.keep_state(state)
    run.status = RunStatus.RUNNING if subtasks else RunStatus.VALIDATING
    run.save(update_fields=["state", "status", "updated_at"])
    bus.send(run, "R2", "R4b", "DispatchManifest", manifest)
    for subtask in subtasks:
        bus.send(run, "R2", "R3", "SubTask", subtask)


def write_next_moves(run_id, final: FinalResult) -> None:
    """After an abandon, R2 says what was accomplished and what to try next."""
    run = Run.objects.get(id=run_id)
    state = run.load_state()
    spec = state.spec or TaskSpec(
        task_id=run.task_id or "task",
        intent=run.raw_input[:200] or "task",
        raw_input=run.raw_input,
    )
    if BusMessage.objects.filter(run=run, type="NextMoves").exists():
        return
    moves, usage = planner.next_moves(
        spec, final, state.outcomes_so_far(), model=runtime.model_for("R2", run)
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
        followups.enqueue(followups.NEXT_MOVES, [str(run.id), run.final_result])
        count += 1
    return count
