"""A run's state between messages: what was asked, planned, held and decided.

``RunState`` is what the shell persists (as JSON) on the Run row; the fan-in of a
round (``FanIn``) decides, in pure methods, which sequence group is released,
whether a held SubTask may run, whether the round is complete and what is
missing. Handlers load a RunState, call these methods, and store it back.

Example of a stored fan-in::

    {"round": 1, "subtask_ids": ["a", "b"], "groups": {"1": ["a"], "2": ["b"]},
     "order": [1, 2], "released": 1, "held": {"2": [17]}, "outcomes": {},
     "evaluated": false, "sent": false, "dispatched_at": "2026-11-23T16:00:00Z"}
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from roles.contracts import (
    Loss,
    Megram,
    PlanDirective,
    SubTask,
    SubTaskOutcome,
    TaskSpec,
)
from roles.memory_contracts import TargetSignal
from roles.memory_rules import MemoryRules
from roles.task_contracts import INFRASTRUCTURE

DEADLINE_REASON = f"{INFRASTRUCTURE}: no outcome before the fan-in deadline"


class FanIn(BaseModel):
    """One round's dispatch: its sequence groups, held SubTasks and outcomes."""

    model_config = ConfigDict(extra="ignore")

    round: int
    subtask_ids: list[str] = Field(default_factory=list)
    groups: dict[int, list[str]] = Field(default_factory=dict)
    order: list[int] = Field(default_factory=list)
    released: int = 0
    held: dict[int, list[int]] = Field(default_factory=dict)
    outcomes: dict[str, SubTaskOutcome] = Field(default_factory=dict)
    evaluated: bool = False
    sent: bool = False
    dispatched_at: datetime | None = None

    @classmethod
    def for_plan(cls, round_: int, subtasks: list[SubTask], now: datetime) -> FanIn:
        """Return the fan-in of a freshly planned round: its first group released."""
        order = sorted({s.sequence for s in subtasks})
        return cls(
            round=round_,
            subtask_ids=[s.subtask_id for s in subtasks],
            groups={
                g: [s.subtask_id for s in subtasks if s.sequence == g] for g in order
            },
            order=order,
            released=order[0] if order else 0,
            dispatched_at=now,
        )

    def is_released(self, sequence: int) -> bool:
        """Return True when SubTasks of this sequence group may run now."""
        return sequence <= self.released

    def hold(self, sequence: int, message_id: int) -> bool:
        """Remember a SubTask of a later group; False if its group is released."""
        if self.is_released(sequence):
            return False
        held = self.held.setdefault(sequence, [])
        if message_id not in held:
            held.append(message_id)
        return True

    def record(self, outcome: SubTaskOutcome) -> list[int]:
        """Record an outcome; return the held messages whose group it releases."""
        self.outcomes[outcome.subtask_id] = outcome
        return self.release()

    def release(self) -> list[int]:
        """Release each next group whose predecessor is complete; return its held."""
        freed: list[int] = []
        while set(self.groups.get(self.released, [])) <= set(self.outcomes):
            later = [g for g in self.order if g > self.released]
            if not later:
                break
            self.released = later[0]
            freed += self.held.pop(later[0], [])
        return freed

    def is_complete(self) -> bool:
        """Return True when every SubTask of the round has an outcome."""
        return set(self.subtask_ids) <= set(self.outcomes)

    def missing(self) -> list[str]:
        """Return the SubTasks of the round that have no outcome yet."""
        return [s for s in self.subtask_ids if s not in self.outcomes]

    def fail_missing(self, parent_task_id: str) -> None:
        """At the deadline, count every missing outcome as an infrastructure failure."""
        for subtask_id in self.missing():
            self.outcomes[subtask_id] = SubTaskOutcome(
                subtask_id=subtask_id,
                parent_task_id=parent_task_id,
                status="failed",
                failure_reason=DEADLINE_REASON,
            )

    def claim_evaluation(self) -> bool:
        """Mark the round evaluated; False when someone already claimed it."""
        if self.evaluated:
            return False
        self.evaluated = True
        return True

    def ordered_outcomes(self) -> list[SubTaskOutcome]:
        """Return the outcomes in dispatch order."""
        return [self.outcomes[s] for s in self.subtask_ids if s in self.outcomes]

    def is_overdue(self, now: datetime, deadline_s: float) -> bool:
        """Return True when the round has waited longer than the fan-in deadline."""
        return self.dispatched_at is not None and now - self.dispatched_at > timedelta(
            seconds=deadline_s
        )

    def matched_outputs(self, limit: int = 2000) -> str:
        """Return the outputs of matched outcomes, one line each, for later groups."""
        return "\n".join(
            f"- {o.intent}: {str(o.output)[:limit]}"
            for o in self.outcomes.values()
            if o.status == "matched" and o.output not in (None, "")
        )

    def matched_evidence(self) -> list[str]:
        """Return the tool evidence entries of matched outcomes, for later groups."""
        return [
            entry
            for o in self.outcomes.values()
            if o.status == "matched"
            for entry in o.tool_calls
        ]


class RunState(BaseModel):
    """Everything a run remembers between messages (the Run row's ``state``)."""

    model_config = ConfigDict(extra="ignore")

    spec: TaskSpec | None = None
    question: str = ""
    clarifications: list[tuple[str, str]] = Field(default_factory=list)
    directive: PlanDirective | None = None
    planned_round: int = -1
    planned_by: int | str | None = None
    fanin: FanIn | None = None
    injected_sops: list[Megram] = Field(default_factory=list)
    # The worked examples R2 was given in any round: an abandon feeds back to them.
    injected_examples: list[Megram] = Field(default_factory=list)
    memory_targets: list[TargetSignal] = Field(default_factory=list)
    replan_requests: int = 0
    loss: Loss | None = None
    cost_by_role: dict = Field(default_factory=dict)
    # Each subtask's outcome across the rounds, keyed by its intent (see
    # ``keep_outcomes``): what the run did, when the last round did nothing.
    run_outcomes: dict[str, SubTaskOutcome] = Field(default_factory=dict)
    # The files the run's subtasks wrote, by content marks [sha256, size, inode]
    # (``roles.tools.own_files``): Law 1 asks nothing before a later subtask changes
    # one that still holds what the run wrote. An older mark (five integers)
    # is read and ignored: that file is asked about as anyone's.
    made: dict[str, list[int | str]] = Field(default_factory=dict)

    def is_planned(self, round_: int) -> bool:
        """Return True when this round was planned already."""
        return self.planned_round >= round_

    def claim_planning(self, round_: int, claimant: int | str) -> bool:
        """Claim the planning of a round; a claimant may take over its own claim."""
        if self.is_planned(round_) and self.planned_by != claimant:
            return False
        self.planned_round, self.planned_by = round_, claimant
        return True

    def fanin_of(self, round_: int) -> FanIn | None:
        """Return the fan-in when it belongs to ``round_``, else None."""
        return self.fanin if self.fanin and self.fanin.round == round_ else None

    def previous_outcomes(self) -> list[SubTaskOutcome]:
        """Return the outcomes of the last dispatched round (R2's history)."""
        return list(self.fanin.outcomes.values()) if self.fanin else []

    def blocked(self) -> tuple[list[str], list[str]]:
        """Return the tools and targets GGS blocked for this round."""
        if self.directive is None:
            return [], []
        return list(self.directive.blocked_tools), list(self.directive.blocked_targets)

    def keep_examples(self, recent: list[Megram], ids: Iterable[str]) -> None:
        """Keep the recalled Megrams of ``ids`` (the worked examples R2 was
        given) beside those of earlier rounds, once each."""
        given, wanted = {e.id for e in self.injected_examples}, set(ids)
        self.injected_examples += [
            m for m in recent if m.id in wanted and m.id not in given
        ]

    def memory_rules(self) -> MemoryRules:
        """Return the (tool, target) pairs memory says to avoid or to confirm.

        R2 keeps R5's signals of the round it planned; the tool layer refuses
        the Avoid pairs and asks the operator before the Caution ones.
        """
        return MemoryRules.of(self.memory_targets)

    def keep_outcomes(self, outcomes: Iterable[SubTaskOutcome]) -> None:
        """Remember a round's outcomes, the latest per intent.

        A match is kept over a later failure of the same intent: its work was
        done, whatever a later round did.
        """
        _keep(self.run_outcomes, outcomes)

    def outcomes_so_far(self) -> list[SubTaskOutcome]:
        """Return every subtask's outcome across the rounds, the current one's too.

        What a run did, for its result and R2's next moves: a run cancelled or
        out of time mid-round still counts the outcomes that round collected.
        """
        return list(_keep(dict(self.run_outcomes), self.previous_outcomes()).values())


def _keep(
    kept: dict[str, SubTaskOutcome], outcomes: Iterable[SubTaskOutcome]
) -> dict[str, SubTaskOutcome]:
    for outcome in outcomes:
        key = outcome.intent or outcome.subtask_id
        known = kept.get(key)
        if known is None or known.status != "matched" or outcome.status == "matched":
            kept[key] = outcome
    return kept
