"""Time spent waiting on a person counts toward neither Ω nor the run's deadline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from artoo_web import runs, watchdog
from artoo_web.handlers import ggs as ggs_handler
from artoo_web.handlers import perceiver
from artoo_web.models import BusMessage, Run
from roles.contracts import ReplanRequest, SubTaskOutcome

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def answered_after(user, *, waited: int, age: int) -> Run:
    """Return a run ``age`` minutes old whose question waited ``waited`` minutes."""
    run = Run.objects.create(owner=user, raw_input="check it", status="perceiving")
    perceiver.ask(run, "Which server?", 1)
    now = timezone.now()
    Run.objects.filter(id=run.id).update(created_at=now - age * MINUTE)
    asked = BusMessage.objects.filter(run=run, type="ClarificationRequest")
    asked.update(created_at=now - waited * MINUTE)
    runs.answer_clarification(Run.objects.get(id=run.id), "the staging server")
    return Run.objects.get(id=run.id)


def test_a_clarification_wait_is_not_run_deadline_time(user, settings):
    settings.ARTOO_RUN_DEADLINE_S = 15 * 60
    run = answered_after(user, waited=20, age=25)
    assert 20 * 60_000 <= run.human_wait_ms < 21 * 60_000
    # 25 minutes old, 20 of them waiting on the user: 5 minutes of work.
    assert watchdog.expire_stuck_runs() == 0
    assert not Run.objects.get(id=run.id).is_terminal


def test_a_clarification_wait_is_not_omega_time(user, settings):
    settings.ARTOO_TIME_BUDGET_S = 300
    run = answered_after(user, waited=20, age=21)
    Run.objects.filter(id=run.id).update(status="validating", task_id="check_it")
    failed = SubTaskOutcome(
        subtask_id="s1", parent_task_id="check_it", status="failed", intent="ping"
    )
    request = ReplanRequest(
        task_id="check_it",
        elapsed_ms=21 * 60_000,
        failed_subtasks=["s1"],
        outcomes=[failed],
    )
    msg = BusMessage.objects.create(
        run=run,
        sender="R4b",
        recipient="R7",
        type="ReplanRequest",
        payload=request.model_dump(mode="json"),
    )
    with transaction.atomic():
        ggs_handler.solve(msg)
    run = Run.objects.get(id=run.id)
    # One minute of 300 s counts: Ω = 0.6·1/3 + 0.4·60/300, far from abandon.
    assert run.load_state().loss.Omega == pytest.approx(0.28, abs=0.01)
    assert run.status == "replanning"
