"""An abandoned run reports the work its earlier rounds completed, with outputs."""

from __future__ import annotations

import pytest

from artoo_web import runs
from artoo_web.models import BusMessage, Run
from tests.conftest import wait_until

pytestmark = pytest.mark.slow

TASK = "echo one\n& echo two\nls /definitely-missing"


def test_an_abandon_after_an_empty_last_round_reports_what_round_one_did(
    celery_worker, user
):
    run = runs.submit(user, TASK)

    moves = wait_until(
        lambda: BusMessage.objects.filter(run=run, type="NextMoves").first(),
        timeout=90,
        what="R2's next moves",
    ).payload

    run = Run.objects.get(id=run.id)
    final = run.final_result
    last = BusMessage.objects.filter(run=run, type="DispatchManifest").latest("id")
    assert last.payload["subtask_ids"] == []  # the last round ran nothing
    assert final["directive"] == "abandon"
    assert "Completed: nothing" not in final["summary"]
    assert "Completed: echo one → one; echo two → two." in final["summary"]
    assert "Failed: ls /definitely-missing." in final["summary"]
    assert moves["accomplished"] == (
        "Completed 2 of 3 subtasks: echo one → one; echo two → two"
    )
    assert moves["next_moves"][0].startswith("Run 'ls /definitely-missing' yourself")
    assert final["next_moves"] == moves
