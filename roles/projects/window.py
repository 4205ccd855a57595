"""The TaskPlanner's sliding window: a done list that rolls up, and a carry-forward.

The done list keeps the last ``done_keep`` entries in full; each older entry is
rolled, deterministically, into one summary paragraph that stays within
``rollup_chars``: its description becomes a short clause, and when the clauses
no longer fit, the oldest are dropped while the count still says how many tasks
came before. The recent past is what the next round plans from; the Assessor
judges the work since its last review, which the full entries hold.

A rolled summary reads::

    Earlier, 9 tasks done (2 oldest not listed): t3 Colony model; t4 Register …
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from roles.contract_base import Contract
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.contracts import (
    AssessTrigger,
    DoneEntry,
    Milestone,
    clip,
    trim_items,
)


class RollUp(Contract):
    """The summary of the tasks that left the done list: a count and clauses."""

    model_config = ConfigDict(frozen=True)

    count: int = Field(default=0, ge=0)
    clauses: list[str] = Field(default_factory=list)

    def text(self) -> str:
        """Return the summary paragraph, or "" when nothing was rolled up."""
        return summary_text(self.count, self.clauses)


class Window(Contract):
    """What the TaskPlanner carries between rounds within one milestone."""

    model_config = ConfigDict(frozen=True)

    done: list[DoneEntry] = Field(default_factory=list)
    rollup: RollUp = Field(default_factory=RollUp)
    carry_forward: list[str] = Field(default_factory=list)


class PlannerView(Contract):
    """The TaskPlanner's input for one round, as the spec's table lists it."""

    model_config = ConfigDict(frozen=True)

    milestone: Milestone
    done_summary: str = ""
    done: list[DoneEntry] = Field(default_factory=list)
    carry_forward: list[str] = Field(default_factory=list)
    qa_feedback: str = ""
    correction_hint: str = ""
    attempt: int = Field(default=1, ge=1)


class AssessorView(Contract):
    """The Assessor's deliberately compressed input, and why it is asked."""

    model_config = ConfigDict(frozen=True)

    trigger: AssessTrigger
    remit: str
    milestone: Milestone
    done_summary: str = ""
    done: list[DoneEntry] = Field(default_factory=list)
    carry_forward: list[str] = Field(default_factory=list)
    context: str = ""


def summary_text(count: int, clauses: list[str]) -> str:
    """Return the roll-up paragraph for ``count`` tasks listing ``clauses``."""
    if not count:
        return ""
    unlisted = count - len(clauses)
    head = f"Earlier, {count} task{'s' if count != 1 else ''} done"
    if unlisted:
        head += f" ({unlisted} oldest not listed)"
    return f"{head}: {'; '.join(clauses)}."


def clause_of(entry: DoneEntry, config: ProjectConfig) -> str:
    """Return the short clause an entry leaves in the summary: id and what it did."""
    return clip(f"{entry.task_id} {entry.description}", config.rough_item_chars)


def roll_up(
    rollup: RollUp, entry: DoneEntry, config: ProjectConfig = DEFAULT_CONFIG
) -> RollUp:
    """Return the summary with ``entry`` rolled in, within ``rollup_chars``."""
    count = rollup.count + 1
    clauses = [*rollup.clauses, clause_of(entry, config)]
    while len(clauses) > 1 and len(summary_text(count, clauses)) > config.rollup_chars:
        clauses.pop(0)
    room = config.rollup_chars - len(summary_text(count, [""]))
    if len(summary_text(count, clauses)) > config.rollup_chars:
        clauses = [clip(clauses[0], room)] if room > len("…") else []
    return RollUp(count=count, clauses=clauses)


def add_done(
    window: Window, entry: DoneEntry, config: ProjectConfig = DEFAULT_CONFIG
) -> Window:
    """Return the window with ``entry`` done; entries past ``done_keep`` roll up."""
    done = [*window.done, entry]
    rollup = window.rollup
    while len(done) > config.done_keep:
        rollup = roll_up(rollup, done.pop(0), config)
    return window.model_copy(update={"done": done, "rollup": rollup})


def with_carry_forward(
    window: Window, items: list[str], config: ProjectConfig = DEFAULT_CONFIG
) -> Window:
    """Return the window with the TaskPlanner's new lookahead, rough and capped."""
    return window.model_copy(update={"carry_forward": trim_items(items, config)})


def clear_carry_forward(window: Window) -> Window:
    """Return the window with no lookahead, so the next round re-thinks it."""
    return window.model_copy(update={"carry_forward": []})


def planner_view(
    window: Window,
    milestone: Milestone,
    *,
    qa_feedback: str = "",
    correction_hint: str = "",
    attempt: int = 1,
) -> PlannerView:
    """Return what the TaskPlanner sees this round: nothing beyond the window."""
    return PlannerView(
        milestone=milestone,
        done_summary=window.rollup.text(),
        done=window.done,
        carry_forward=window.carry_forward,
        qa_feedback=qa_feedback,
        correction_hint=correction_hint,
        attempt=attempt,
    )


def assessor_view(
    window: Window,
    remit: str,
    milestone: Milestone,
    trigger: AssessTrigger,
    context: str = "",
) -> AssessorView:
    """Return what the Assessor sees: remit, milestone and the current window."""
    return AssessorView(
        trigger=trigger,
        remit=remit,
        milestone=milestone,
        done_summary=window.rollup.text(),
        done=window.done,
        carry_forward=window.carry_forward,
        context=context,
    )
