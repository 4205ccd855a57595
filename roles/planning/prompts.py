"""R2's texts: the plan, replan and next-moves prompts, and the next-moves template.

The model answers ``{"task_criteria": [...], "subtasks": [{"intent",
"success_criteria", "context", "sequence"}]}``; ids are the runtime's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

from roles.claims.evidence import split_exit_code
from roles.contracts import (
    FinalResult,
    NextMoves,
    PlanDirective,
    SubTaskOutcome,
    TaskSpec,
)
from roles.result_text import fallback_moves

OUTCOME_OUTPUT_CHARS = 400

PLAN_SYSTEM = """\
You are R2, the Planner of a multi-agent system. First interpret the task: turn \
its intent into concrete, falsifiable task_criteria about the MERGED result. Then \
decompose it into the minimum number of subtasks that together satisfy them; one \
subtask is best for a simple operation. A question one command can answer is one \
subtask. Never add a subtask that only reports, formats, checks or summarises \
another subtask's result: the merge does that.

Executors have these tools: {tools}.

Sequence: subtasks with the same number run in parallel; different numbers run \
in order, starting at 1. Outputs of sequence N are given to sequence N+1.
Context: put everything an executor needs (paths, formats, remembered constraints) \
in its context; do not repeat discovery done in an earlier sequence. Use standard \
Unix tools or the built-in tools, not third-party CLIs (cloc, tokei, jq, ripgrep, \
fd, bat).
Success criteria: concrete assertions about tool output, never intent echoes. \
Bad: "the weekday is found". Good: "output names one weekday, Monday to Sunday". \
A criterion is a string or {{"criterion": "...", "mode": "verifiable|plausible", \
"check": {{...}}}} where check is one of {{"type": "exit_code", "value": 0}}, \
{{"type": "output_contains", "value": "..."}}, {{"type": "output_matches", \
"pattern": "regex"}}, {{"type": "file_exists", "path": "..."}}, \
{{"type": "json_field", "path": "a.b", "value": ...}}.
task_criteria: assertions about the merged output. Bad: "all subtasks completed \
successfully". Good: "the answer states the total line count as a number".
Memory: every OPERATOR RULES line is the operator's instruction: obey it and \
pass it on in the context of the subtasks it concerns; every MUST NOT line is an \
approach that failed and must not be reused (blocked tools are removed from the \
executors; blocked targets and memory Avoid targets are refused); every SHOULD \
PREFER line worked before; CAUTION means check each step (a memory Caution \
target is put to the operator before it runs).

Reply with only this JSON object, no prose, no code fence:
{{"task_criteria": ["..."], "subtasks": [{{"intent": "...", "success_criteria": \
["..."], "context": "...", "sequence": 1}}]}}
Do not write subtask ids: the runtime assigns them."""

DIRECTIVE_GUIDE = """\
Directive semantics:
- refine: keep the approach, tighten parameters, narrow the scope, adjust terms.
- change_path: same tools, different targets or parameters.
- change_approach: a clearly different tool class or method.
- break_symmetry: the plan is stuck in a local minimum; use none of the blocked \
tools and a genuinely novel approach, not a near-identical plan.
failure_class guidance:
- environmental: change the target or parameters, not the tool class.
- logical: change the tool class or method.
- mixed: fix the environmental blockers first.
Rules: follow the directive; never use a blocked tool or a blocked target; do not \
repeat the failed approach; reply with the same JSON object as before."""

NEXT_MOVES_SYSTEM = """\
You are R2, the Planner. The task was abandoned. Write the graceful failure: what \
was actually accomplished, and 2 or 3 concrete next moves the user can take, given \
what failed and why. Each move is an action (start with a verb); never restate \
why the task was abandoned. Reply with only this JSON object:
{"accomplished": "...", "next_moves": ["...", "..."]}"""


def plan_messages(
    spec: TaskSpec,
    *,
    today: date,
    constraints: str,
    tools: Sequence[str],
    directive: PlanDirective | None = None,
    previous_outcomes: Sequence[SubTaskOutcome] = (),
) -> list[dict[str, str]]:
    """Return the chat messages of a plan, or of a replan when ``directive``."""
    system = PLAN_SYSTEM.format(tools=", ".join(tools) or "(none)")
    parts = [
        f"Today's date: {today.isoformat()}",
        # What the request asks (``asks``) is for the validators' code, not R2.
        "TaskSpec:\n" + _json(spec.model_dump(mode="json", exclude={"asks"})),
    ]
    parts += replan_parts(directive, previous_outcomes)
    parts.append(
        "--- MEMORY CONSTRAINTS (code-derived) ---\n"
        + (constraints.rstrip() or "(none)")
        + "\n--- END CONSTRAINTS ---"
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def replan_parts(
    directive: PlanDirective | None, previous_outcomes: Sequence[SubTaskOutcome]
) -> list[str]:
    """Return what R2 hears about the rounds before this one.

    A ``retry`` directive (``roles.ggs.control``) is heard as its one sentence
    alone: the previous attempt failed, its gap, try again.
    """
    if directive is not None and directive.directive == "retry":
        return [directive.rationale]
    parts = []
    if directive is not None:
        # The strategy is the runtime's business, not a planning hint.
        heard = directive.model_dump(mode="json", exclude={"control"})
        parts.append("PlanDirective:\n" + _json(heard))
        parts.append(DIRECTIVE_GUIDE)
    if previous_outcomes:
        parts.append(
            "Outcomes of the previous round:\n" + outcomes_text(previous_outcomes)
        )
    return parts


def outcomes_text(outcomes: Sequence[SubTaskOutcome]) -> str:
    """Return one line per outcome: status, intent, reason and output head."""
    lines = []
    for outcome in outcomes:
        line = f"- [{outcome.status}] {outcome.intent or outcome.subtask_id}"
        if outcome.failure_reason:
            line += f" — failure: {outcome.failure_reason}"
        output = output_text(outcome.output)
        if output:
            line += f" — output: {_head(output, OUTCOME_OUTPUT_CHARS)}"
        lines.append(line)
    return "\n".join(lines)


def next_moves_messages(
    spec: TaskSpec, final: FinalResult, outcomes: Sequence[SubTaskOutcome]
) -> list[dict[str, str]]:
    """Return the chat messages asking for the graceful failure."""
    parts = [
        # What the request asks (``asks``) is for the validators' code, not R2.
        "TaskSpec:\n" + _json(spec.model_dump(mode="json", exclude={"asks"})),
        f"Why it was abandoned: {final.summary}\n{final.rationale}".rstrip(),
        "Outcomes of the run's subtasks, every round (a match is kept over a later "
        "failure):\n" + (outcomes_text(outcomes) or "(no subtask ran)"),
    ]
    return [
        {"role": "system", "content": NEXT_MOVES_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def output_text(output: Any) -> str:
    """Return an outcome's output as text (JSON for structured values)."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output.strip()
    return json.dumps(output, ensure_ascii=False, default=str)


def _head(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def template_next_moves(
    spec: TaskSpec, final: FinalResult, outcomes: Sequence[SubTaskOutcome]
) -> NextMoves:
    """Return the graceful failure built from the outcomes alone.

    The moves are actions built from the failed steps; none repeats the
    FinalResult's summary, which the user reads beside them.
    """
    failed = [o for o in outcomes if o.status == "failed"]
    return NextMoves(
        task_id=spec.task_id,
        accomplished=accomplished_text(outcomes),
        next_moves=fallback_moves(failed)[:3],
    )


def accomplished_text(outcomes: Sequence[SubTaskOutcome]) -> str:
    """Return what the matched outcomes accomplished, in one line.

    ``outcomes`` are the run's, across rounds, so work an earlier round did
    counts when the last round did nothing.
    """
    done = [o for o in outcomes if o.status == "matched"]
    if not done:
        return "Nothing was accomplished: no subtask succeeded."
    parts = []
    for outcome in done:
        # The exit code line of a shell output says nothing a match did not.
        output = " ".join(split_exit_code(output_text(outcome.output))[1].split())
        head = output[:120] + ("…" if len(output) > 120 else "")
        parts.append(f"{_name(outcome)}" + (f" → {head}" if head else ""))
    return f"Completed {len(done)} of {len(outcomes)} subtasks: " + "; ".join(parts)


def _name(outcome: SubTaskOutcome) -> str:
    return outcome.intent or outcome.subtask_id
