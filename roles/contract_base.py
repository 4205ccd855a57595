"""The base of every message contract and the vocabulary the contracts share."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Level = Literal["M", "K", "C", "T"]
Action = Literal["Ignore", "Exploit", "Avoid", "Caution"]


class Contract(BaseModel):
    """Base of every message: unknown keys are ignored, known ones validated."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


Mode = Literal["verifiable", "plausible"]
FailureClass = Literal["logical", "environmental"]
# ``retry`` is the control strategy of that name's plain replan (roles.ggs.control).
ActionDirective = Literal[
    "refine", "change_path", "change_approach", "break_symmetry", "retry"
]
TerminalDirective = Literal["accept", "success", "abandon"]
MacroState = Literal[
    "init",
    "refine",
    "change_path",
    "change_approach",
    "break_symmetry",
    "retry",
    "accept",
    "success",
    "abandon",
]
# How a run is steered between rounds (roles.ggs.control).
Control = Literal["ggs", "retry", "single", "warming"]
Anomaly = Literal[
    "none",
    "boundary_violation",
    "drift",
    "convergence_failure",
    "ggs_thrashing",
    "duplicate_subtask_id",
    "fanin_incomplete",
    "role_drift",
]
NonEmpty = Annotated[str, Field(min_length=1)]
