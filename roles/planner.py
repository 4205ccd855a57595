"""R2, the Planner: interpret the task, decompose it, obey GGS's directive.

``plan`` calibrates from memory (in code), asks the model for ``{"task_criteria",
"subtasks"}`` and then owns what the model may not decide: every subtask id comes
from ``id_factory``, ``parent_task_id`` is the spec's task_id and a missing or
non-positive ``sequence`` becomes 1. The plan validator rejects an empty plan
(one regeneration) and a subtask naming a blocked tool (two regenerations, each
saying why); when no plan results, ``Plan.error`` says why and the pipeline sends
an empty DispatchManifest. ``next_moves`` writes the graceful failure after an
abandon.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from roles.claims.question import question_for
from roles.contracts import (
    CriterionSpec,
    FinalResult,
    MemoryRecall,
    NextMoves,
    PlanDirective,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
)
from roles.llm.client import LLMClient, LLMError, LLMOutputError, Usage
from roles.llm.offline import OfflineModel
from roles.llm.offline_roles import OfflinePlanError, offline_subtasks
from roles.planning.blocked_paths import names_tool, tell_blocked
from roles.planning.calibration import Calibration, calibrate
from roles.planning.prompts import (
    accomplished_text,
    next_moves_messages,
    plan_messages,
    template_next_moves,
)
from roles.planning.replies import NextMovesReply, PlanReply
from roles.planning.shape import shape_plan

__all__ = ["Calibration", "Plan", "calibrate", "next_moves", "plan"]

# An absolute path, or a file name with an extension, as a user writes them.

DEFAULT_TOOLS = ("shell", "glob", "read_file", "write_file", "search", "fetch_url")
EMPTY_PLAN_RETRIES = 1
BLOCKED_TOOL_RETRIES = 2
EMPTY_PLAN = "the plan had no subtasks"


@dataclass
class Plan:
    """R2's plan: subtasks and task criteria, or the reason there is none."""

    subtasks: list[SubTask]
    task_criteria: list[CriterionSpec]
    usage: Usage | None = None
    error: str = ""
    calibration: Calibration | None = None
    notes: list[str] = field(default_factory=list)


def plan(
    spec: TaskSpec,
    *,
    model: LLMClient | OfflineModel,
    recall: MemoryRecall | None = None,
    directive: PlanDirective | None = None,
    previous_outcomes: Sequence[SubTaskOutcome] = (),
    today: date,
    id_factory: Callable[[], str],
    available_tools: Sequence[str] = DEFAULT_TOOLS,
) -> Plan:
    """Return a plan for ``spec``, or a replan when ``directive`` is given.

    Never raises for a model failure (only LLMCancelled propagates).
    """
    calibration = calibrate(recall, directive)
    if isinstance(model, OfflineModel):
        return _offline_plan(spec, model, directive, previous_outcomes, id_factory)
    blocked = list(directive.blocked_tools) if directive else []
    tools = [t for t in available_tools if t not in blocked]
    messages = plan_messages(
        spec,
        today=today,
        constraints=calibration.text,
        tools=tools,
        directive=directive,
        previous_outcomes=previous_outcomes,
    )
    result = _ask_for_plan(model, messages, blocked)
    result.calibration = calibration
    if not result.error:
        result.subtasks, result.task_criteria, notes = shape_plan(
            result.subtasks,
            result.task_criteria,
            spec.raw_input,
            join=model.settings.plan_chains == "join",
            steps=model.settings.plan_steps == "show",
            blocked_targets=directive.blocked_targets if directive else (),
            question=question_for(spec.asks, spec.raw_input),
            recalled="\n".join(
                [
                    *calibration.operator,
                    *calibration.must_not,
                    *calibration.should_prefer,
                    *calibration.caution,
                ]
            ),
        )
        result.notes += notes
        result.subtasks = _assign(result.subtasks, spec.task_id, id_factory)
    return result


def _offline_plan(
    spec: TaskSpec,
    model: OfflineModel,
    directive: PlanDirective | None,
    previous_outcomes: Sequence[SubTaskOutcome],
    id_factory: Callable[[], str],
) -> Plan:
    model.pause()
    calibration = calibrate(None, directive)
    try:
        subtasks = offline_subtasks(
            spec,
            directive=directive,
            previous_outcomes=previous_outcomes,
            id_factory=id_factory,
        )
    except OfflinePlanError as err:
        return Plan([], [], error=str(err), calibration=calibration)
    return Plan(subtasks, [], calibration=calibration)


def _ask_for_plan(
    model: LLMClient, messages: list[dict[str, str]], blocked: list[str]
) -> Plan:
    usage: Usage | None = None
    empty_left, blocked_left = EMPTY_PLAN_RETRIES, BLOCKED_TOOL_RETRIES
    while True:
        try:
            reply, used = model.complete_json(messages, PlanReply)
        except LLMOutputError as err:
            return Plan([], [], _add(usage, err.usage), f"R2 planning failed: {err}")
        except LLMError as err:
            return Plan([], [], usage, f"R2 planning failed: {err}")
        usage = _add(usage, used)
        problem = _problem(reply, blocked)
        if not problem:
            criteria = list(reply.task_criteria)
            return Plan(_draft(reply), criteria, usage, notes=reply.notes)
        if problem == EMPTY_PLAN:
            empty_left -= 1
            if empty_left < 0:
                return Plan([], [], usage, f"R2 could not make a valid plan: {problem}")
        else:
            blocked_left -= 1
            if blocked_left < 0:
                return _without_blocked(reply, blocked, usage, problem)
        messages = [*messages, *_rejection(reply, problem)]


def _without_blocked(
    reply: PlanReply, blocked: list[str], usage: Usage | None, problem: str
) -> Plan:
    """Return the plan that still names a blocked tool, each such subtask told
    that the tool is gone. Its executors do not have the tool, so the plan can
    run; abandoning a task over a word in an intent would cost more."""
    note = f"R2 kept naming a blocked tool ({problem}); the plan runs without it"
    subtasks = tell_blocked(_draft(reply), blocked)
    return Plan(subtasks, list(reply.task_criteria), usage, notes=[*reply.notes, note])


def _problem(reply: PlanReply, blocked: list[str]) -> str:
    """Return why the plan is invalid, or "" when it is valid."""
    if not reply.subtasks:
        return EMPTY_PLAN
    for number, sub in enumerate(reply.subtasks, start=1):
        named = names_tool(f"{sub.intent}\n{sub.context}", blocked)
        if named:
            return (
                f"subtask {number} ({sub.intent!r}) names the blocked tool "
                f"{named!r}; blocked tools are removed from the executors"
            )
    return ""


def _rejection(reply: PlanReply, problem: str) -> list[dict[str, str]]:
    return [
        {"role": "assistant", "content": reply.model_dump_json()},
        {
            "role": "user",
            "content": f"Your plan was rejected: {problem}. Write a new plan that "
            "fixes this, as the same JSON object.",
        },
    ]


def _draft(reply: PlanReply) -> list[SubTask]:
    """Return the reply's subtasks with placeholder ids (replaced by _assign)."""
    return [
        SubTask(
            subtask_id="pending",
            parent_task_id="pending",
            intent=sub.intent,
            success_criteria=list(sub.success_criteria),
            context=sub.context,
            sequence=sub.sequence if sub.sequence and sub.sequence > 0 else 1,
        )
        for sub in reply.subtasks
    ]


def _assign(
    subtasks: list[SubTask], task_id: str, id_factory: Callable[[], str]
) -> list[SubTask]:
    return [
        s.model_copy(update={"subtask_id": id_factory(), "parent_task_id": task_id})
        for s in subtasks
    ]


def _add(total: Usage | None, more: Usage | None) -> Usage | None:
    if more is None:
        return total
    return more if total is None else total + more


def next_moves(
    spec: TaskSpec,
    final: FinalResult,
    outcomes: Sequence[SubTaskOutcome],
    *,
    model: LLMClient | OfflineModel,
) -> tuple[NextMoves, Usage | None]:
    """Return what was accomplished and 2–3 next moves after an abandon.

    The model writes them; offline, or when the model fails, a template does.
    """
    if isinstance(model, OfflineModel):
        model.pause()
        return template_next_moves(spec, final, outcomes), None
    try:
        reply, usage = model.complete_json(
            next_moves_messages(spec, final, outcomes), NextMovesReply
        )
    except LLMOutputError as err:
        return template_next_moves(spec, final, outcomes), err.usage
    except LLMError:
        return template_next_moves(spec, final, outcomes), None
    moves = [m.strip() for m in reply.next_moves if m.strip()][:3]
    if len(moves) < 2:
        return template_next_moves(spec, final, outcomes), usage
    accomplished = reply.accomplished.strip() or accomplished_text(outcomes)
    return NextMoves(
        task_id=spec.task_id, accomplished=accomplished, next_moves=moves
    ), usage
