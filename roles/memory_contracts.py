"""The memory's messages: a megram, its potentials, R2's query and R5's recall."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from roles.contract_base import Action, Contract, Level, NonEmpty

GLOBAL_SPACE = "global:user"
GLOBAL_ENTITY = "env:local"
# Whose a Megram is: "user:<id>" for a run's experience, SHARED for one tied to
# no run (what an operator remembered); "" for one stored before owners were.
SHARED_OWNER = "shared"
# The most runs a Megram names as what it rests on.
MAX_RUNS = 20


def owner_for_user(user_id: object) -> str:
    """Return the owner of the Megrams written by the runs of a user."""
    return f"user:{user_id}"


class Megram(Contract):
    """One unit of experience in MKCT memory (paper §6.2).

    ``id``, ``created_at`` and ``level`` may be left empty by a writer; the
    store fills them (uuid4, now in UTC, ``M``). R5 sets ``owner`` from the
    run that sent the Megram (``SHARED_OWNER`` when none did).
    """

    id: str = ""
    level: Level = "M"
    created_at: datetime | None = None
    space: str = Field(min_length=1)
    entity: str = Field(min_length=1)
    content: str = ""
    state: str = ""
    f: float = Field(ge=0.0, le=1.0)
    sigma: float = Field(ge=-1.0, le=1.0)
    k: float = Field(ge=0.0)
    owner: str = ""
    # What it rests on: the run that wrote it (set by R5, as ``owner`` is), or
    # for a Dreamer rule the runs of the experiences it was consolidated from.
    runs: list[str] = Field(default_factory=list, max_length=MAX_RUNS)


class Potentials(Contract):
    """Decay-weighted potentials of one (space, entity) pair and their action."""

    attention: float
    decision: float
    action: Action


class MemoryQuery(Contract):
    """R2's calibration query; the pair defaults to intent:<task_id>, env:local.

    ``intent`` finds related past tasks filed under another task_id; ``tools``
    are those the round may use, whose failed targets memory reports.
    """

    task_id: NonEmpty
    space: str = ""
    entity: str = ""
    limit: int = Field(default=10, ge=1)
    intent: str = ""
    tools: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _default_pair(self) -> MemoryQuery:
        self.space = self.space or f"intent:{self.task_id}"
        self.entity = self.entity or "env:local"
        return self


class RelatedTask(Contract):
    """A past task whose intent shares enough words with this one's."""

    space: NonEmpty
    intent: str
    score: float


class TargetSignal(Contract):
    """What memory says of one (tool, target) pair: refuse it, or confirm first.

    Read from the ``tool:<name>`` / ``target:<value>`` Megrams GGS writes for
    failing calls; ``megram_id`` and ``content`` name the newest of them.
    """

    tool: NonEmpty
    target: NonEmpty
    action: Literal["Avoid", "Caution"]
    attention: float
    decision: float
    megram_id: str = ""
    content: str = ""
    # The query's intent names one of its files (or its text): it bears on
    # the task, so the planner is told of it; every pair is refused anyway.
    bears: bool = False


class MemoryRecall(Contract):
    """R5's answer to a MemoryQuery: SOPs, recent experience, potentials.

    ``operator`` holds what an operator remembered (the global space),
    ``related`` the past tasks whose experience joined ``sops`` and ``recent``,
    ``targets`` the failed (tool, target) pairs of the query's tools.
    """

    task_id: NonEmpty
    space: NonEmpty
    entity: NonEmpty
    sops: list[Megram] = Field(default_factory=list)
    recent: list[Megram] = Field(default_factory=list)
    attention: float = 0.0
    decision: float = 0.0
    action: Action = "Ignore"
    constraints: str = ""
    available: bool = True
    operator: list[Megram] = Field(default_factory=list)
    related: list[RelatedTask] = Field(default_factory=list)
    targets: list[TargetSignal] = Field(default_factory=list)
