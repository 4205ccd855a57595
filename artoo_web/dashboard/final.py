"""The final result: summary, output and exit code; after an abandon, next moves."""

from __future__ import annotations

from artoo_web.dashboard.output import exit_code, output_text
from artoo_web.models import BusMessage, Run


def final_context(run: Run) -> dict:
    final = run.final_result
    if not final:
        return {"final": None}
    moves = final.get("next_moves")
    if moves is None and final.get("directive") == "abandon":
        msg = (
            BusMessage.objects.filter(run=run, type="NextMoves").order_by("-id").first()
        )
        moves = msg.payload if msg else None
    return {
        "final": final,
        "final_text": output_text(final.get("output")),
        "final_exit_code": exit_code(final.get("output")),
        "next_moves": moves,
    }
