"""The memory's messages: a megram, its potentials, R2's query and R5's recall."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, model_validator

from roles.contract_base import Action, Contract, Level, NonEmpty


class Megram(Contract):
    """One unit of experience in MKCT memory (paper §6.2).

    ``id``, ``created_at`` and ``level`` may be left empty by a writer; the
    store fills them (uuid4, now in UTC, ``M``).
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


class Potentials(Contract):
    """Decay-weighted potentials of one (space, entity) pair and their action."""

    attention: float
    decision: float
    action: Action


class MemoryQuery(Contract):
    """R2's calibration query; the pair defaults to intent:<task_id>, env:local."""

    task_id: NonEmpty
    space: str = ""
    entity: str = ""
    limit: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _default_pair(self) -> MemoryQuery:
        self.space = self.space or f"intent:{self.task_id}"
        self.entity = self.entity or "env:local"
        return self


class MemoryRecall(Contract):
    """R5's answer to a MemoryQuery: SOPs, recent experience, potentials."""

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
