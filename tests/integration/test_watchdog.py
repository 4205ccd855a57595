"""The watchdog ends runs that outlived their deadline, never a waiting one."""

from datetime import timedelta

import pytest
from django.utils import timezone

from artoo_web import watchdog
from artoo_web.models import Approval, BusMessage, Run

pytestmark = pytest.mark.django_db(transaction=True)


def aged(run: Run, seconds: int) -> Run:
    Run.objects.filter(id=run.id).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )
    return run


def test_a_run_past_its_deadline_is_abandoned_once(user, settings):
    run = aged(Run.objects.create(owner=user, raw_input="x", status="running"), 1000)
    assert watchdog.expire_stuck_runs() == 1
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.final_result["directive"] == "abandon"
    assert "deadline" in run.final_result["summary"]
    assert watchdog.expire_stuck_runs() == 0
    assert BusMessage.objects.filter(run=run, type="FinalResult").count() == 1


def test_a_run_waiting_on_its_operator_is_left_alone(user):
    run = aged(Run.objects.create(owner=user, raw_input="x", status="running"), 1000)
    Approval.objects.create(
        run=run, subtask_id="s", tool="shell", command="rm x", reason="rm"
    )
    fresh = Run.objects.create(owner=user, raw_input="y", status="running")
    assert watchdog.expire_stuck_runs() == 0
    assert {r.status for r in Run.objects.filter(id__in=[run.id, fresh.id])} == {
        "running"
    }
