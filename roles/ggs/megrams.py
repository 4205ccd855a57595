"""The Megrams GGS writes: one per run end, one per failing (tool, target).

Terminal states write ``space intent:<task_id>``, ``entity env:local``, except
an abandon whose every failure is the machinery's (``infrastructure``): the
model endpoint, a cancel or the fan-in deadline tried no approach, so memory
learns nothing from it and recalls nothing of it as "this approach failed"; action
states write ``space tool:<name>``, ``entity target:<value>`` for every distinct
failing call: a call of a failed subtask whose own result failed (as for
blocked targets, ``roles.ggs.blocks``); a file read by a subtask that then
miscounted is no bad target. f, σ and k come from the quantization matrix (paper §6.3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from roles.claims.evidence import ToolCall, parse_evidence, split_exit_code
from roles.contracts import Megram, SubTaskOutcome
from roles.ggs.blocks import is_failed_result
from roles.ggs.output import dedupe
from roles.toolclass import cut_call

CONTENT_LIMIT = 500
REASON_LIMIT = 160
# How much of a worked call's first output line memory keeps: its shape.
SHAPE_LIMIT = 60
FEEDBACK_K = 0.05

QUANTIZATION: dict[str, tuple[float, float, float]] = {
    "abandon": (0.95, -1.0, 0.05),
    "accept": (0.90, 1.0, 0.05),
    "change_approach": (0.85, -1.0, 0.05),
    "success": (0.80, 1.0, 0.05),
    "break_symmetry": (0.75, 1.0, 0.05),
    "change_path": (0.30, 0.0, 0.2),
    "refine": (0.10, 0.5, 0.5),
}


def make_megram(
    space: str,
    entity: str,
    content: str,
    state: str,
    *,
    now: datetime | None = None,
    id_factory: Callable[[], str] | None = None,
) -> Megram:
    """Return a Megram of ``state`` quantized by the matrix; id/time if injected."""
    f, sigma, k = QUANTIZATION[state]
    return Megram(
        id=id_factory() if id_factory else "",
        created_at=now,
        space=space,
        entity=entity,
        content=content[:CONTENT_LIMIT],
        state=state,
        f=f,
        sigma=sigma,
        k=k,
    )


def calls_of(
    outcomes: Iterable[SubTaskOutcome],
) -> list[tuple[SubTaskOutcome, ToolCall]]:
    """Return every parsable tool call of ``outcomes`` with its outcome."""
    return [
        (outcome, call)
        for outcome in outcomes
        for call in map(parse_evidence, outcome.tool_calls)
        if call is not None
    ]


def infrastructure_only(outcomes: Iterable[SubTaskOutcome]) -> bool:
    """True when some outcome failed and every failed one failed because the
    machinery did (no approach of the run was judged)."""
    failed = [o for o in outcomes if o.status == "failed"]
    return bool(failed) and all(o.infrastructure for o in failed)


def terminal_content(state: str, outcomes: list[SubTaskOutcome], gap: str = "") -> str:
    """Return the content of a terminal Megram: a success as a worked example
    (each call that worked and the first line it printed, never the summary
    sentence, which a small planner copies as a criterion), a failure as the
    tools tried and the gap."""
    wanted = "failed" if state == "abandon" else "matched"
    calls = [c for _, c in calls_of(o for o in outcomes if o.status == wanted)]
    if state != "abandon":
        worked = dedupe(_worked(call) for call in calls if not is_failed_result(call))
        return f"Succeeded. Worked: {'; '.join(worked)}." if worked else "Succeeded."
    entries = dedupe(_named(call) for call in calls)
    tools = ", ".join(entries)
    parts = ["Failed."]
    if tools:
        parts.append(f"Tools tried: {tools}.")
    if gap:
        parts.append(f"Gap: {gap}")
    return " ".join(parts)


def _named(call: ToolCall) -> str:
    return cut_call(call) or (
        f"{call.tool}:{call.target}" if call.target else call.tool
    )


def _worked(call: ToolCall) -> str:
    """Return a call that worked as a worked example: the call, what it printed."""
    said = next(
        (
            ln.strip()
            for ln in split_exit_code(call.output)[1].splitlines()
            if ln.strip()
        ),
        "",
    )
    if len(said) > SHAPE_LIMIT:
        said = said[: SHAPE_LIMIT - 1] + "…"
    return f"{_named(call)} → {said}" if said else _named(call)


def action_megrams(
    state: str,
    failing: list[tuple[SubTaskOutcome, ToolCall]],
    *,
    now: datetime | None = None,
    id_factory: Callable[[], str] | None = None,
) -> list[Megram]:
    """Return one Megram per distinct (tool, target) of the failing calls; its
    content is the one-line reason the call failed (``failure_line``), never
    the task's intent: a later task that meets the target learns why it
    failed, not what another task was about."""
    megrams, seen = [], set()
    for outcome, call in failing:
        if not call.target or (call.tool, call.target) in seen:
            continue
        seen.add((call.tool, call.target))
        content = failure_line(call, outcome.failure_reason or "")
        megrams.append(
            make_megram(
                f"tool:{call.tool}",
                f"target:{call.target}",
                content,
                state,
                now=now,
                id_factory=id_factory,
            )
        )
    return megrams


def failure_line(call: ToolCall, reason: str = "") -> str:
    """Return the one line that says why ``call`` failed: the first line it
    printed (with a non-zero exit code), else the first line of ``reason``."""
    code, body = split_exit_code(call.output)
    said = next((line.strip() for line in body.splitlines() if line.strip()), "")
    if said and code not in (None, 0):
        said = f"exit {code}: {said}"
    said = said or next((ln.strip() for ln in reason.splitlines() if ln.strip()), "")
    said = " ".join(said.split()) or "failed"
    return said if len(said) <= REASON_LIMIT else said[: REASON_LIMIT - 1] + "…"


def fed_back(
    sops: list[Megram],
    examples: list[Megram],
    directive: str,
    outcomes: Iterable[SubTaskOutcome],
) -> list[Megram]:
    """Return what a round's failure feeds back to: the SOPs injected into the
    round and, when the run abandons on a judged approach (not only because
    the machinery failed), the worked examples it was given in any round."""
    if directive == "abandon" and not infrastructure_only(outcomes):
        return [*sops, *examples]
    return list(sops)


def negative_feedback(
    rules: Iterable[Megram],
    directive: str,
    gap: str,
    *,
    now: datetime | None = None,
    id_factory: Callable[[], str] | None = None,
) -> list[Megram]:
    """Return the write-back Megrams for SOPs followed by a failing round (and
    for worked examples followed by an abandoned run).

    Each is K-level evidence in its rule's pair with the rule's f, σ −1 and the
    decay of experience (k 0.05): it lowers the pair's decision potential, so
    trust bankruptcy can demote the rule (DESIGN §6 R5), and being no rule
    itself it is never recalled as a proven constraint.
    """
    if directive in ("accept", "success"):
        return []
    content = f"Followed, then the round failed ({directive}): {gap}"[:CONTENT_LIMIT]
    return [
        Megram(
            id=id_factory() if id_factory else "",
            level="K",
            created_at=now,
            space=rule.space,
            entity=rule.entity,
            content=content,
            state="negative_feedback",
            f=rule.f,
            sigma=-1.0,
            k=FEEDBACK_K,
        )
        for rule in rules
    ]
