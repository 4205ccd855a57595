"""The result: headline, completed steps, why it stopped, next moves; the output.

The run's record (``Run.final_result``) is a FinalResult, or R1's direct answer,
which is none (``"directive": "direct"``). Once R2 has written them, the record
also carries the NextMoves under ``next_moves``. ``roles.result_text`` decides
what the user reads; the template renders it.
"""

from __future__ import annotations

from artoo_web.dashboard.output import exit_code, output_text
from artoo_web.models import BusMessage, Run, RunStatus
from roles.contracts import FinalResult, NextMoves, read_payload
from roles.result_text import Report, report


def final_context(run: Run) -> dict:
    record = run.final_result
    if not record:
        return {"final": None}
    final = read_payload("FinalResult", record)
    return {
        "final": record,
        "final_text": output_text(final.output),
        "final_exit_code": exit_code(final.output),
        "result": result_of(run, record, final),
    }


def result_of(run: Run, record: dict, final: FinalResult) -> Report:
    """Return what the finished run tells its user."""
    directive = record.get("directive") or run.directive
    moves = next_moves(run, record, abandoned=directive == "abandon")
    return report(
        run.raw_input,
        directive,
        final,
        run.load_state().outcomes_so_far(),
        moves,
        cancelled=run.status == RunStatus.CANCELLED,
    )


def next_moves(run: Run, record: dict, *, abandoned: bool) -> NextMoves | None:
    """Return R2's next moves: from the record, or after an abandon, the bus."""
    moves = record.get("next_moves")
    if moves is None and abandoned:
        msg = (
            BusMessage.objects.filter(run=run, type="NextMoves").order_by("-id").first()
        )
        moves = msg.payload if msg else None
    return None if moves is None else read_payload("NextMoves", moves)
