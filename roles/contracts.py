"""Message contracts of artoo: pydantic models with the spec's JSON field names.

Every model validates on construction; invalid data raises a
``pydantic.ValidationError`` that names the offending field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Level = Literal["M", "K", "C", "T"]
Action = Literal["Ignore", "Exploit", "Avoid", "Caution"]


class Contract(BaseModel):
    """Base of every message: unknown keys are ignored, known ones validated."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


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
