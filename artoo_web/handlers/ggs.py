"""R7 on the bus: one step of the run's control strategy per verdict.

The strategy (``Run.control``: GGS, plain retry or a single round) is data that
``roles.ggs.control`` reads; GGS's state is kept on the Run row whatever it is.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from artoo_web import bus, followups, runtime
from artoo_web.models import BusMessage, Run, RunStatus
from artoo_web.runs import conclude, lock_current
from roles.contracts import FinalResult, Megram, OutcomeSummary, ReplanRequest
from roles.ggs import control
from roles.ggs import megrams as ggs_megrams
from roles.ggs import solver as ggs
from roles.ggs.loss import GGSConfig
from roles.runstate import RunState

CONTRACT = {"ReplanRequest": ReplanRequest, "OutcomeSummary": OutcomeSummary}


def solve(msg: BusMessage) -> None:
    """(R7, ReplanRequest | OutcomeSummary): step the control; replan or end."""
    run = lock_current(msg.run_id, msg.round)
    if run is None:
        return
    message = CONTRACT[msg.type].model_validate(msg.payload)
    state = run.load_state()
    state.keep_outcomes(message.outcomes)
    result = control.step(
        run.control,
        ggs.GGSState.from_dict(run.ggs_state or {}),
        message,
        GGSConfig(time_budget_ms=settings.ARTOO_TIME_BUDGET_S * 1000),
        human_wait_ms=run.human_wait_ms,
        now=timezone.now(),
        id_factory=runtime.new_id,
        run_outcomes=state.outcomes_so_far(),
    )
    run.ggs_state = result.state.to_dict()
    output = result.output
    state.loss = output.loss
    for megram in result.megrams + feedback(state, output, message.outcomes):
        bus.send(run, "R7", "R5", "Megram", megram)
    run.keep_state(state)
    if isinstance(output, FinalResult):
        end(run, output)
        return
    run.round += 1
    run.status = RunStatus.REPLANNING
    run.directive = output.directive
    run.save()
    bus.send(run, "R7", "R2", "PlanDirective", output)


def feedback(state: RunState, output, outcomes) -> list[Megram]:
    """Return write-back Megrams for what the round's failure feeds back to
    (``ggs_megrams.fed_back``)."""
    sops, state.injected_sops = state.injected_sops, []
    rules = ggs_megrams.fed_back(
        sops, state.injected_examples, output.directive, outcomes
    )
    gap = getattr(output, "rationale", "") or getattr(output, "summary", "")
    return ggs_megrams.negative_feedback(
        rules, output.directive, gap, now=timezone.now(), id_factory=runtime.new_id
    )


def end(run: Run, final: FinalResult) -> None:
    status = RunStatus.FAILED if final.directive == "abandon" else RunStatus.DONE
    conclude(run, final, status)
    if final.directive == "abandon":
        payload = final.model_dump(mode="json")
        followups.later(followups.NEXT_MOVES, [str(run.id), payload])
    transaction.on_commit(followups.dream_soon)
