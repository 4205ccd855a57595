"""artoo end to end on the offline model: real worker, Redis, database, LevelDB."""

from __future__ import annotations

import pytest

from artoo_web import runs, runtime
from artoo_web.models import Approval, BusMessage, Run
from tests.conftest import wait_until

pytestmark = pytest.mark.slow


def finished(run: Run, timeout: float = 60) -> Run:
    def done():
        fresh = Run.objects.get(id=run.id)
        return fresh if fresh.is_terminal else None

    return wait_until(done, timeout=timeout)


def bus_types(run: Run) -> list[str]:
    return list(BusMessage.objects.filter(run=run).values_list("type", flat=True))


def transitions(run: Run) -> list[str]:
    rows = BusMessage.objects.filter(
        run=run, sender="R7", type__in=("PlanDirective", "FinalResult")
    ).order_by("id")
    return [f"{m.payload['prev_directive']}→{m.payload['directive']}" for m in rows]


def test_one_command_is_accepted_on_the_first_try(celery_worker, user):
    run = finished(runs.submit(user, "echo hello # expect: hel+o"))
    assert run.status == "done"
    assert transitions(run) == ["init→accept"]
    assert bus_types(run).count("FinalResult") == 1
    outcome = BusMessage.objects.get(run=run, type="SubTaskOutcome").payload
    assert outcome["status"] == "matched"
    assert any(
        entry.startswith('shell: {"command": "echo hello # expect: hel+o"} → ')
        and "hello" in entry
        for entry in outcome["tool_calls"]
    )
    pending = BusMessage.objects.filter(run=run, delivered_at__isnull=True)
    wait_until(lambda: not pending.exists())


def test_a_failing_command_ends_in_abandon_with_next_moves(celery_worker, user):
    run = runs.submit(user, "echo one\n& echo two\nls /definitely-missing")
    run = finished(run, timeout=90)
    assert run.status == "failed"
    assert run.final_result["directive"] == "abandon"
    steps = transitions(run)
    assert steps[0].startswith("init→") and steps[-1].endswith("→abandon")
    assert len(steps) >= 2
    assert bus_types(run).count("FinalResult") == 1
    wait_until(lambda: BusMessage.objects.filter(run=run, type="NextMoves").exists())
    failed = [
        m.payload
        for m in BusMessage.objects.filter(run=run, type="SubTaskOutcome")
        if m.payload["status"] == "failed"
    ]
    assert failed
    assert all(
        v["failure_class"] == "environmental"
        for o in failed
        for v in o["criteria_verdicts"]
        if v["verdict"] == "fail"
    )


def test_later_group_starts_after_the_parallel_group_with_its_outputs(
    celery_worker, user
):
    run = finished(runs.submit(user, "echo alpha\n& echo beta\necho gamma"))
    assert run.status == "done"
    results = BusMessage.objects.filter(run=run, type="ExecutionResult").order_by("id")
    outputs = [str(m.payload["output"]) for m in results]
    assert "gamma" in outputs[-1]
    subtasks = {
        m.payload["subtask_id"]: m.payload["sequence"]
        for m in BusMessage.objects.filter(run=run, type="SubTask")
    }
    assert sorted(subtasks.values()) == [1, 1, 2]


def test_approved_destructive_command_runs(celery_worker, user, seed):
    target = seed("doomed.txt")
    run = runs.submit(user, f"cat {target}\nrm {target}")
    approval = wait_until(lambda: Approval.objects.filter(run=run).first(), timeout=30)
    assert approval.command == f"rm {target}"
    assert Run.objects.get(id=run.id).status == "awaiting_approval"
    assert target.exists()
    assert [(c["kind"], c["path"]) for c in approval.changes] == [
        ("deleted", str(target))
    ]
    runs.decide_approval(run, approval.id, "approve", user)
    run = finished(run)
    assert run.status == "done"
    assert not target.exists()
    assert bus_types(run).count("ApprovalDecision") == 1


def test_a_file_an_earlier_subtask_made_is_deleted_without_asking(celery_worker, user):
    run = finished(runs.submit(user, "touch made.txt\nrm made.txt"))
    assert run.status == "done"
    assert not (runtime.workspace_for(run) / "made.txt").exists()
    assert not Approval.objects.filter(run=run).exists()


def test_denied_destructive_command_never_runs(celery_worker, user, seed):
    kept = seed("kept.txt")
    run = runs.submit(user, f"cat {kept}\nrm {kept}")
    approval = wait_until(lambda: Approval.objects.filter(run=run).first(), timeout=30)
    runs.decide_approval(run, approval.id, "deny", user)
    run = finished(run, timeout=90)
    assert kept.exists()
    assert run.final_result["directive"] == "abandon"
    evidence = " ".join(
        e
        for m in BusMessage.objects.filter(run=run, type="ExecutionResult")
        for e in m.payload["tool_calls"]
    )
    assert "[LAW1]" in evidence


def test_unanswered_effect_is_discarded_at_the_timeout(
    celery_worker, user, settings, seed
):
    settings.ARTOO_APPROVAL_TIMEOUT_S = 1
    kept = seed("kept.txt", "keep\n")
    run = runs.submit(user, f"cat {kept}\nsed -i s/keep/lost/ {kept}")
    run = finished(run, timeout=90)
    approvals = list(Approval.objects.filter(run=run))
    assert approvals and {a.status for a in approvals} == {"expired"}
    assert approvals[0].changes[0]["kind"] == "overwritten"
    assert kept.read_text() == "keep\n"
    assert run.final_result["directive"] == "abandon"


def test_replayed_approval_decision_is_refused(celery_worker, user, seed):
    run = runs.submit(user, f"rm {seed('x.txt')}")
    approval = wait_until(lambda: Approval.objects.filter(run=run).first(), timeout=30)
    runs.decide_approval(run, approval.id, "deny", user)
    with pytest.raises(runs.Conflict):
        runs.decide_approval(run, approval.id, "approve", user)
    finished(run, timeout=90)


def test_cancel_stops_a_running_command(celery_worker, user):
    run = runs.submit(user, "sleep 60")
    wait_until(lambda: BusMessage.objects.filter(run=run, type="SubTask").exists())
    wait_until(lambda: Run.objects.get(id=run.id).status == "running")
    runs.cancel(Run.objects.get(id=run.id))
    run = Run.objects.get(id=run.id)
    assert run.status == "cancelled"
    assert run.final_result["directive"] == "abandon"
    subtask = BusMessage.objects.get(run=run, type="SubTask")
    # The shell was killed: the effector finished long before `sleep 60` would.
    wait_until(lambda: BusMessage.objects.get(id=subtask.id).delivered_at, timeout=10)
    assert bus_types(run).count("FinalResult") == 1
    with pytest.raises(runs.Conflict):
        runs.cancel(run)


@pytest.mark.parametrize("left_in", ["queued", "perceiving"])
def test_sweeper_restarts_a_run_whose_first_step_was_lost(celery_worker, user, left_in):
    from datetime import timedelta

    from django.utils import timezone

    from artoo_web import tasks

    # As if the start was never enqueued, or its worker died while R1 ran.
    run = Run.objects.create(owner=user, raw_input="echo recovered", status=left_in)
    Run.objects.filter(id=run.id).update(
        updated_at=timezone.now() - timedelta(seconds=120)
    )
    assert (
        tasks.sweep_outbox.apply_async(queue="pipeline", ignore_result=False).get(
            timeout=10
        )
        == 1
    )
    run = finished(run)
    assert run.status == "done"
    assert bus_types(run).count("TaskSpec") == 1


def test_sweeper_resumes_a_round_whose_evaluation_task_was_lost(celery_worker, user):
    from datetime import timedelta

    from django.utils import timezone

    from artoo_web import bus, tasks

    spec = {"task_id": "echo_ok", "intent": "echo ok", "raw_input": "echo ok"}
    outcome = {
        "subtask_id": "s1",
        "parent_task_id": "echo_ok",
        "intent": "echo ok",
        "status": "matched",
        "output": "ok",
    }
    run = Run.objects.create(
        owner=user,
        raw_input="echo ok",
        task_id="echo_ok",
        status="validating",
        state={
            "spec": spec,
            "planned_round": 0,
            "fanin": {
                "round": 0,
                "subtask_ids": ["s1"],
                "outcomes": {"s1": outcome},
                "evaluated": True,
                "groups": {"1": ["s1"]},
                "order": [1],
                "released": 1,
                "held": {},
            },
        },
    )
    manifest = {"task_id": "echo_ok", "subtask_ids": ["s1"], "task_spec": spec}
    msg = bus.send(run, "R2", "R4b", "DispatchManifest", manifest)
    BusMessage.objects.filter(id=msg.id).update(delivered_at=timezone.now())
    # The claim was committed, but the evaluate task went down with the broker.
    Run.objects.filter(id=run.id).update(
        updated_at=timezone.now() - timedelta(seconds=120)
    )
    assert (
        tasks.sweep_outbox.apply_async(queue="pipeline", ignore_result=False).get(
            timeout=10
        )
        == 1
    )
    run = finished(run)
    assert run.status == "done"
    assert transitions(run) == ["init→accept"]
