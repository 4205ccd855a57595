"""Law 1 approvals park their subtask: no worker waits, and a closed round voids them.

Real worker, database and Redis, the offline model (each line is a command).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from artoo_web import api_tokens, bus, redisconn, runs, topics
from artoo_web.handlers import HANDLERS, executor, meta_validator
from artoo_web.models import Approval, BusMessage, Run, TraceEvent
from tests.conftest import wait_until
from tests.integration.test_pipeline_offline import bus_types, finished, transitions

pytestmark = pytest.mark.slow

WORKER_THREADS = 4  # the celery_worker fixture's concurrency


def parked(run: Run, count: int = 1, timeout: float = 60) -> list[Approval]:
    """Wait until ``count`` approvals of the run wait on the operator."""
    pending = Approval.objects.filter(run=run, status="pending")
    wait_until(lambda: pending.count() >= count, timeout=timeout, what="approvals")
    return list(pending.order_by("created_at"))


def cancel_all(listed: list[Run]) -> None:
    for run in listed:
        fresh = Run.objects.get(id=run.id)
        if not fresh.is_terminal:
            runs.cancel(fresh)


def test_pending_approvals_hold_no_worker(celery_worker, user, seed):
    waiting = [
        runs.submit(user, f"rm {seed(f'doomed{n}.txt')}") for n in range(WORKER_THREADS)
    ]
    try:
        for run in waiting:
            parked(run)
        # Every worker thread would be waiting on an operator before the fix.
        other = finished(runs.submit(user, "echo hello # expect: hel+o"), timeout=60)
        assert other.status == "done"
        assert Approval.objects.filter(run__in=waiting, status="pending").count() == 4
        assert {Run.objects.get(id=r.id).status for r in waiting} == {
            "awaiting_approval"
        }
    finally:
        cancel_all(waiting)


def test_an_approved_effect_is_applied_by_the_resumed_subtask(
    celery_worker, user, seed
):
    target = seed("doomed.txt")
    run = runs.submit(user, f"cat {target}\nrm {target}")
    (approval,) = parked(run)
    subtask = BusMessage.objects.get(
        run=run, type="SubTask", payload__intent=f"rm {target}"
    )
    # Parked: the SubTask is handled and nothing of the command is applied yet.
    assert subtask.delivered_at is not None and target.exists()
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run)
    assert run.status == "done" and not target.exists()
    resumed = TraceEvent.objects.get(run=run, kind="subtask_resumed")
    assert resumed.data["approval_id"] == str(approval.id)
    assert resumed.data["decision"] == "approved"


def test_a_redelivered_decision_resumes_nothing(celery_worker, user, seed):
    run = runs.submit(user, f"rm {seed('doomed.txt')}")
    (approval,) = parked(run)
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run)
    outcomes = BusMessage.objects.filter(run=run, type="SubTaskOutcome").count()
    decision = BusMessage.objects.get(run=run, type="ApprovalDecision")
    # The decision's handler resumes the subtask before it marks the decision
    # delivered and drops its lease: the run can end while that delivery holds it.
    wait_until(
        lambda: (
            BusMessage.objects.filter(
                id=decision.id, delivered_at__isnull=False
            ).exists()
            and not redisconn.client().exists(topics.lease_key(decision.id))
        ),
        what="the decision's first delivery to end",
    )
    BusMessage.objects.filter(id=decision.id).update(delivered_at=None)
    assert bus.deliver(decision.id, HANDLERS) == "delivered"
    assert executor.resume(approval.id) == "already-resumed"
    assert executor.expire(approval.id) == "already-resumed"
    assert BusMessage.objects.filter(run=run, type="SubTaskOutcome").count() == outcomes
    assert TraceEvent.objects.filter(run=run, kind="subtask_resumed").count() == 1


def test_cancel_denies_a_parked_approval_and_nothing_resumes(celery_worker, user, seed):
    kept = seed("kept.txt")
    run = runs.submit(user, f"rm {kept}")
    (approval,) = parked(run)
    runs.cancel(Run.objects.get(id=run.id))
    assert Approval.objects.get(id=approval.id).status == "denied"
    assert executor.expire(approval.id) == "void"
    assert kept.exists()
    assert not TraceEvent.objects.filter(run=run, kind="subtask_resumed").exists()


def test_an_effect_whose_file_changed_while_parked_is_refused(
    celery_worker, user, seed
):
    kept = seed("kept.txt", "keep\n")
    run = runs.submit(user, f"sed -i s/keep/lost/ {kept}")
    (approval,) = parked(run)
    kept.write_text("changed by hand\n")
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run, timeout=90)
    assert kept.read_text() == "changed by hand\n"
    evidence = " ".join(
        entry
        for m in BusMessage.objects.filter(run=run, type="ExecutionResult")
        for entry in m.payload["tool_calls"]
    )
    assert "changed while the command's effect waited; nothing applied" in evidence


def test_the_fanin_deadline_does_not_count_time_waiting_on_the_operator(
    celery_worker, user, seed
):
    doomed = seed("doomed.txt")
    run = runs.submit(user, f"rm {doomed}")
    (approval,) = parked(run)
    now = timezone.now()
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)
        state = locked.load_state()
        state.fanin.dispatched_at = now - timedelta(seconds=400)
        locked.keep_state(state)
        locked.save(update_fields=["state"])
    Approval.objects.filter(id=approval.id).update(
        created_at=now - timedelta(seconds=390)
    )
    # 400 s since dispatch, 390 of them waiting on the operator: 10 s of work.
    assert meta_validator.deadline_passed(run.id, locked.round) == "waiting-on-human"
    assert not Run.objects.get(id=run.id).load_state().fanin.evaluated
    runs.decide_approval(run, approval.id, "approve", user)
    assert meta_validator.deadline_passed(run.id, locked.round) == "not-yet"
    run = finished(run)
    assert run.status == "done" and transitions(run) == ["init→accept"]
    assert not doomed.exists()


def test_an_executor_of_a_closed_round_stops(celery_worker, user, settings):
    settings.ARTOO_FANIN_DEADLINE_S = 1
    settings.ARTOO_SHELL_TIMEOUT_S = 120
    run = runs.submit(user, "sleep 90")
    try:
        subtask = wait_until(
            lambda: BusMessage.objects.filter(run=run, type="SubTask").first(),
            timeout=30,
        )
        wait_until(
            lambda: BusMessage.objects.get(id=subtask.id).delivered_at,
            timeout=20,
            what="the SubTask of the closed round handled",
        )
        stopped = TraceEvent.objects.filter(run=run, kind="subtask_stopped")
        assert stopped.filter(data__subtask_id=subtask.payload["subtask_id"]).exists()
        outcomes = BusMessage.objects.filter(run=run, type="SubTaskOutcome", round=0)
        assert not outcomes.exists()
    finally:
        cancel_all([run])


def close_round(run: Run) -> None:
    """Close the run's round as a fan-in deadline that claimed it would."""
    assert meta_validator.claim_evaluation(run.id, Run.objects.get(id=run.id).round)


def test_a_decision_on_an_approval_of_a_closed_round_is_409_and_runs_nothing(
    celery_worker, user, client, seed
):
    doomed = seed("doomed.txt")
    run = runs.submit(user, f"rm {doomed}")
    try:
        (approval,) = parked(run)
        close_round(run)
        _, secret = api_tokens.create(user)
        response = client.post(
            f"/api/runs/{run.id}/approvals/{approval.id}",
            data='{"decision": "approve"}',
            content_type="application/json",
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert response.status_code == 409
        assert "voided" in response.json()["error"]
        assert Approval.objects.get(id=approval.id).status == "voided"
        assert "ApprovalDecision" not in bus_types(run)
        assert executor.expire(approval.id) == "void"
        assert doomed.exists()
    finally:
        cancel_all([run])


def test_the_page_answers_409_for_an_approval_of_a_closed_round(
    celery_worker, user, client, seed
):
    doomed = seed("doomed.txt")
    run = runs.submit(user, f"rm {doomed}")
    try:
        (approval,) = parked(run)
        close_round(run)
        client.force_login(user)
        url = reverse("run-approval", args=[run.id, approval.id])
        htmx = client.post(url, {"decision": "approve"}, headers={"HX-Request": "true"})
        assert htmx.status_code == 409
        assert "voided" in htmx.content.decode()
        again = client.post(url, {"decision": "approve"})
        assert again.status_code == 409
        assert "voided" in again.content.decode()
        assert doomed.exists()
    finally:
        cancel_all([run])


def test_parallel_approvals_count_once_as_human_time(celery_worker, user, seed):
    run = runs.submit(user, f"rm {seed('a.txt')}\n& rm {seed('b.txt')}")
    first, second = parked(run, 2)
    now = timezone.now()
    Approval.objects.filter(id=first.id).update(created_at=now - timedelta(seconds=60))
    Approval.objects.filter(id=second.id).update(created_at=now - timedelta(seconds=50))
    runs.decide_approval(run, first.id, "approve", user)
    runs.decide_approval(run, second.id, "approve", user)
    run = finished(run)
    assert run.status == "done"
    # The union of [-60 s, now] and [-50 s, now], not their sum (110 s).
    assert 60_000 <= run.human_wait_ms < 75_000
