"""What GGS keeps between rounds, and what a step or a run's end hands back.

``GGSState`` is stored on the Run row between rounds (``GGSState()`` is round
0); ``StepResult`` is one step's answer. ``state_after`` is the state a round
leaves, ``final_result`` the FinalResult a round ends the run with, and
``forced_abandon`` the one of a run ended from outside the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field

from roles.contracts import (
    Contract,
    FinalResult,
    Loss,
    MacroState,
    Megram,
    PlanDirective,
)
from roles.ggs.loss import GGSConfig, total_loss
from roles.ggs.output import Round


class GGSState(Contract):
    """What GGS remembers about a run between rounds; ``GGSState()`` is round 0."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    l_prev: float | None = None
    replans: int = Field(default=0, ge=0)
    worsening_count: int = Field(default=0, ge=0)
    tried_targets: list[str] = Field(default_factory=list)
    prev_directive: MacroState = "init"
    # The failing calls of the last round, as ``blocks.call_key`` keys them.
    last_calls: list[str] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the state as plain JSON data for the Run row."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GGSState:
        """Return the state stored by ``to_dict``; raise ValidationError if bad."""
        return cls.model_validate(data)


@dataclass(frozen=True)
class StepResult:
    """The outcome of one GGS step."""

    output: PlanDirective | FinalResult
    state: GGSState
    megrams: list[Megram] = field(default_factory=list)

    @property
    def directive(self) -> str:
        """Return the macro-state chosen this round."""
        return self.output.directive


def state_after(
    state: GGSState, rnd: Round, tried: list[str], calls: list[str] | None = None
) -> GGSState:
    """Return the state kept after round ``rnd``, with the targets tried so far
    and the keys of its failing calls."""
    return GGSState(
        l_prev=rnd.l,
        replans=rnd.replans,
        worsening_count=rnd.worsening_count,
        tried_targets=list(tried),
        prev_directive=rnd.directive,
        last_calls=list(calls or []),
    )


def final_result(
    state: GGSState,
    task_id: str,
    rnd: Round,
    text: tuple[str, Any, str],
    **more: str,
) -> FinalResult:
    """Return the FinalResult of a run that ends at round ``rnd``; ``text`` is its
    summary, output and rationale, ``more`` its other text fields (``reason``,
    ``control``)."""
    summary, output, rationale = text
    return FinalResult(
        task_id=task_id,
        summary=summary,
        output=output,
        loss=rnd.loss,
        grad_l=rnd.grad,
        replans=rnd.replans,
        prev_directive=state.prev_directive,
        directive=rnd.directive,
        rationale=rationale,
        **more,
    )


def forced_abandon(
    state: GGSState,
    task_id: str,
    summary: str,
    rationale: str,
    last_loss: Loss | None = None,
    config: GGSConfig = GGSConfig(),  # noqa: B008 (frozen, shared default)
    reason: str = "",
) -> FinalResult:
    """Return the FinalResult of a run ended from outside the loop.

    Cancel, a handler that keeps failing and the run deadline end a run without a
    verdict; the loss is the last round's, or, before any round, nothing verified
    (D 1), nothing known about the cause (P 0.5) and no budget spent.
    """
    loss = last_loss or Loss(
        D=1.0, P=0.5, Omega=0.0, L=total_loss(1.0, 0.5, 0.0, config)
    )
    return FinalResult(
        task_id=task_id,
        summary=summary,
        loss=loss,
        replans=state.replans,
        prev_directive=state.prev_directive,
        directive="abandon",
        rationale=rationale,
        reason=reason,
    )
