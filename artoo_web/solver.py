"""R7 on the bus: one GGS step per verdict, state kept on the Run row."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from artoo_web import bus, runtime
from artoo_web.models import BusMessage, Run, RunStatus
from artoo_web.pipeline import finish
from roles import ggs, ggs_megrams
from roles.contracts import FinalResult, Megram, OutcomeSummary, ReplanRequest

CONTRACT = {"ReplanRequest": ReplanRequest, "OutcomeSummary": OutcomeSummary}


@bus.handler("R7", "ReplanRequest")
@bus.handler("R7", "OutcomeSummary")
def solve(msg: BusMessage) -> None:
    run = Run.objects.select_for_update().get(id=msg.run_id)
    if run.is_terminal or msg.round != run.round:
        return
    message = CONTRACT[msg.type].model_validate(msg.payload)
    result = ggs.step(
        ggs.GGSState.from_dict(run.ggs_state or {}),
        message,
        human_wait_ms=run.human_wait_ms,
        now=timezone.now(),
        id_factory=runtime.new_id,
    )
    run.ggs_state = result.state.to_dict()
    output = result.output
    run.state["loss"] = output.loss.model_dump(mode="json", by_alias=True)
    for megram in result.megrams + feedback(run, output):
        bus.send(run, "R7", "R5", "Megram", megram)
    if isinstance(output, FinalResult):
        end(run, output)
        return
    run.round += 1
    run.status = RunStatus.REPLANNING
    run.directive = output.directive
    run.save()
    bus.send(run, "R7", "R2", "PlanDirective", output)


def feedback(run: Run, output) -> list[Megram]:
    """Return write-back Megrams for the SOPs R2 injected into this round."""
    rules = [Megram.model_validate(m) for m in run.state.pop("injected_sops", [])]
    gap = getattr(output, "rationale", "") or getattr(output, "summary", "")
    return ggs_megrams.negative_feedback(
        rules, output.directive, gap, now=timezone.now(), id_factory=runtime.new_id
    )


def end(run: Run, final: FinalResult) -> None:
    from artoo_web.tasks import dream_soon, next_moves

    status = RunStatus.FAILED if final.directive == "abandon" else RunStatus.DONE
    finish(run, final, status)
    bus.send(run, "R7", "User", "FinalResult", final)
    run_id = str(run.id)
    payload = final.model_dump(mode="json")
    if final.directive == "abandon":
        runtime.later(next_moves, [run_id, payload])
    transaction.on_commit(lambda: dream_soon())
