"""The final result: summary, output and exit code; after an abandon, next moves.

The template shows the run's record (``Run.final_result``) as stored: it is a
FinalResult, or R1's direct answer, which is none (``"directive": "direct"``).
Once R2 has written them, the record also carries the NextMoves under
``next_moves``.
"""

from __future__ import annotations

from artoo_web.dashboard.output import exit_code, output_text
from artoo_web.models import BusMessage, Run
from roles.contracts import NextMoves, read_payload


def final_context(run: Run) -> dict:
    record = run.final_result
    if not record:
        return {"final": None}
    final = read_payload("FinalResult", record)
    return {
        "final": record,
        "final_text": output_text(final.output),
        "final_exit_code": exit_code(final.output),
        "next_moves": next_moves(run, record, abandoned=final.directive == "abandon"),
    }


def next_moves(run: Run, record: dict, *, abandoned: bool) -> NextMoves | None:
    """Return R2's next moves: from the record, or after an abandon, the bus."""
    moves = record.get("next_moves")
    if moves is None and abandoned:
        msg = (
            BusMessage.objects.filter(run=run, type="NextMoves").order_by("-id").first()
        )
        moves = msg.payload if msg else None
    return None if moves is None else read_payload("NextMoves", moves)
