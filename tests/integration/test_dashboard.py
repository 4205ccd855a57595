"""The run dashboard: every part rendered from the run's records, and its actions."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from artoo_web import bus, dashboard, runs
from artoo_web.auditlog import AuditEventRecord, AuditReportRecord
from artoo_web.models import Approval, BusMessage, Run, RunStatus
from roles.contracts import AuditEvent
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def finished(run: Run, timeout: float = 60) -> Run:
    def done():
        fresh = Run.objects.get(id=run.id)
        return fresh if fresh.is_terminal else None

    return wait_until(done, timeout=timeout)


def page(client, run) -> str:
    response = client.get(reverse("run-detail", args=[run.id]))
    assert response.status_code == 200
    return response.content.decode()


def element(html: str, element_id: str) -> str:
    """Return the html from an element's opening tag to the end of the page."""
    start = html.index(f'id="{element_id}"')
    return html[html.rindex("<", 0, start) :]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_accepted_run_shows_transition_chart_lane_and_result(
    client, celery_worker, user
):
    run = finished(runs.submit(user, "echo hello # expect: hel+o"))
    client.force_login(user)
    html = page(client, run)
    timeline = element(html, "ggs-timeline")
    assert "init→accept" in timeline
    assert 'id="round-0"' in timeline
    chart = element(html, "loss-chart")
    assert "<svg" in chart and "Loss per round" in chart
    lanes = element(html, "lanes")
    assert "verdict-pass" in lanes
    assert "echo hello # expect: hel+o" in lanes
    final = element(html, "final-result")
    assert re.search(r'class="exit-code">0<', final)
    assert "[exit code" not in final.split('id="lanes"')[0]
    assert "hello" in final
    for m in BusMessage.objects.filter(run=run):
        assert f'id="msg-{m.id}"' in html


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_operator_approves_a_law_one_prompt_and_the_run_finishes(
    client, celery_worker, user, seed
):
    kept = seed("a.txt")
    run = runs.submit(user, f"cat {kept}\nrm {kept}")
    approval = wait_until(
        lambda: Approval.objects.filter(run=run, status="pending").first(), 60
    )
    client.force_login(user)
    prompts = element(page(client, run), "prompts")
    assert f"rm {kept}" in prompts and "Approve" in prompts
    url = reverse("run-approval", args=[run.id, approval.id])
    response = client.post(url, {"decision": "approve"}, headers=HTMX)
    assert response.status_code == 200
    assert 'id="prompts"' in response.content.decode()
    assert "Approved" in response.content.decode()
    assert finished(run).status == "done"
    again = client.post(url, {"decision": "deny"}, headers=HTMX)
    assert "already approved" in again.content.decode()


def test_cancel_button_cancels_the_run_and_a_second_cancel_explains(
    client, user, run, purge_queues
):
    client.force_login(user)
    url = reverse("run-cancel", args=[run.id])
    response = client.post(url, headers=HTMX)
    assert response.status_code == 200
    assert 'id="run-header"' in response.content.decode()
    assert Run.objects.get(id=run.id).status == RunStatus.CANCELLED
    assert "Cancel run" not in response.content.decode()
    again = client.post(url, headers=HTMX).content.decode()
    assert "already cancelled" in again


def test_cancel_without_htmx_redirects_back_with_the_message(client, user, run):
    client.force_login(user)
    runs.cancel(run)
    response = client.post(reverse("run-cancel", args=[run.id]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("run-detail", args=[run.id])
    assert "already cancelled" in response.content.decode()


def test_another_user_cannot_act_on_a_run(client, run, other_user):
    client.force_login(other_user)
    for name in ("run-cancel", "run-answer", "run-audit"):
        assert client.post(reverse(name, args=[run.id])).status_code == 404
    assert Run.objects.get(id=run.id).status == RunStatus.QUEUED


def test_clarification_prompt_takes_an_answer_and_empty_means_proceed(
    client, user, run, purge_queues
):
    run.status = RunStatus.NEEDS_INPUT
    run.state = {"question": "Which <b>directory</b>?"}
    run.save()
    client.force_login(user)
    prompts = element(page(client, run), "prompts")
    assert "Which &lt;b&gt;directory&lt;/b&gt;?" in prompts
    assert 'name="answer"' in prompts
    client.post(reverse("run-answer", args=[run.id]), {"answer": ""}, headers=HTMX)
    answer = BusMessage.objects.get(run=run, type="ClarificationAnswer")
    assert answer.payload["answer"] == ""
    assert Run.objects.get(id=run.id).status == RunStatus.PERCEIVING
    again = client.post(reverse("run-answer", args=[run.id]), {"answer": "x"})
    assert again.status_code == 302


def test_audit_now_sends_an_audit_query_to_r6(client, user, run):
    client.force_login(user)
    response = client.post(reverse("run-audit", args=[run.id]), headers=HTMX)
    query = BusMessage.objects.get(run=run, type="AuditQuery")
    assert (query.sender, query.recipient) == ("User", "R6")
    assert f"query #{query.id}" in response.content.decode()


def test_audit_panel_lists_this_runs_anomalies_and_the_latest_report(client, user, run):
    other = Run.objects.create(owner=user, raw_input="other")
    for target, detail in ((run, "R3 wrote to R7"), (other, "elsewhere")):
        AuditEventRecord.append(
            AuditEvent(
                event_id=detail,
                timestamp=timezone.now(),
                run_id=str(target.id),
                from_role="R3",
                to_role="R7",
                message_type="SubTask",
                anomaly="boundary_violation",
                detail=detail,
            )
        )
    AuditReportRecord.objects.create(
        report_id="rep-1",
        trigger="periodic",
        period_from="2025-01-01T00:00:00Z",
        period_to="2025-01-01T00:05:00Z",
        payload={"tasks_observed": 7, "anomalies": ["a"], "boundary_violations": []},
    )
    client.force_login(user)
    panel = element(page(client, run), "audit-panel")
    assert "R3 wrote to R7" in panel and "elsewhere" not in panel
    assert "7 tasks observed" in panel


def test_timeline_rows_carry_gradient_arrows_blocked_targets_and_memory(user, run):
    run.task_id = "demo"
    run.save()
    loss = {"D": 0.5, "P": 0.5, "Omega": 0.2, "L": 0.6}
    bus.send(
        run,
        "R5",
        "R2",
        "MemoryRecall",
        {
            "task_id": "demo",
            "space": "s",
            "entity": "e",
            "action": "Caution",
            "constraints": "Avoid rm",
        },
        round=0,
    )
    bus.send(
        run,
        "R7",
        "R2",
        "PlanDirective",
        {
            "task_id": "demo",
            "loss": loss,
            "prev_directive": "init",
            "directive": "change_path",
            "blocked_targets": ["/etc"],
            "failure_class": "logical",
            "budget_pressure": 0.1,
            "grad_l": 0.2,
            "rationale": "stuck <here>",
        },
        round=1,
    )
    rows = dashboard.timeline_rows(run)
    assert rows[0]["transition"] == "init→change_path"
    assert (rows[0]["judged"], rows[0]["arrow"], rows[0]["trend"]) == (
        0,
        "↑",
        "worsening",
    )
    assert rows[0]["memory"]["action"] == "Caution"
    html = dashboard.render_parts(run.id, ["ggs-timeline"])["ggs-timeline"]
    assert "target: /etc" in html and "stuck &lt;here&gt;" in html
    assert "(worsening)" in html


def test_a_recalled_megram_names_the_runs_it_rests_on_that_are_the_viewers(
    user, other_user, run
):
    earlier = Run.objects.create(owner=user, raw_input="count the lines")
    bobs = Run.objects.create(owner=other_user, raw_input="count the lines")

    def recalled(mid: str, rests_on: list[str]) -> dict:
        return {
            "id": mid,
            "level": "M",
            "space": "intent:demo",
            "entity": "env:local",
            "content": "wc -l notes.txt printed 4",
            "state": "accept",
            "f": 0.9,
            "sigma": 1.0,
            "k": 0.05,
            "runs": rests_on,
        }

    recent = [
        recalled("aaaa1111-x", [str(earlier.id), str(bobs.id)]),
        recalled("bbbb2222-y", [str(bobs.id), "not-a-run"]),
    ]
    payload = {"task_id": "demo", "space": "intent:demo", "entity": "env:local"}
    bus.send(run, "R5", "R2", "MemoryRecall", {**payload, "recent": recent}, round=0)
    run.task_id = "demo"
    run.save()
    html = dashboard.render_parts(run.id, ["ggs-timeline"])["ggs-timeline"]
    first, second = html.split("aaaa1111", 1)[1].split("bbbb2222", 1)
    assert reverse("run-detail", args=[earlier.id]) in first
    assert str(bobs.id) not in html and "not-a-run" not in html
    assert "no run of yours" in second


def test_memory_unavailable_round_says_so(user, run):
    from artoo_web import runtime

    runtime.trace(run, "R2", "memory_unavailable", round=0)
    loss = {"D": 0.0, "P": 0.0, "Omega": 0.1, "L": 0.02}
    bus.send(
        run,
        "R7",
        "User",
        "FinalResult",
        {
            "task_id": "t",
            "summary": "ok",
            "loss": loss,
            "prev_directive": "init",
            "directive": "accept",
            "grad_l": -0.5,
        },
        round=0,
    )
    html = dashboard.render_parts(run.id, ["ggs-timeline"])["ggs-timeline"]
    assert "memory unavailable" in html and "(improving)" in html


def test_lanes_show_attempts_corrections_and_verdicts_per_sequence_group(user, run):
    criterion = {"criterion": "prints hi", "mode": "verifiable"}
    for sid, seq in (("s1", 1), ("s2", 2)):
        bus.send(
            run,
            "R2",
            "R3",
            "SubTask",
            {
                "subtask_id": sid,
                "parent_task_id": "t",
                "intent": f"do {sid}",
                "success_criteria": [criterion],
                "sequence": seq,
            },
        )
    bus.send(
        run,
        "R3",
        "R4a",
        "ExecutionResult",
        {
            "subtask_id": "s1",
            "status": "failed",
            "output": "[exit code 2]\nnope",
            "tool_calls": ['shell: {"command": "x"} → nope'],
        },
    )
    bus.send(
        run,
        "R4a",
        "R3",
        "CorrectionSignal",
        {
            "subtask_id": "s1",
            "attempt_number": 1,
            "failure_class": "logical",
            "what_was_wrong": "wrong flag",
            "what_to_do": "use -n",
        },
    )
    bus.send(
        run,
        "R4a",
        "R4b",
        "SubTaskOutcome",
        {
            "subtask_id": "s1",
            "parent_task_id": "t",
            "status": "failed",
            "criteria_verdicts": [
                {
                    "criterion": "prints hi",
                    "verdict": "fail",
                    "failure_class": "logical",
                    "evidence": "saw nope",
                }
            ],
        },
    )
    lanes = dashboard.lane_rounds(run)
    assert [g["sequence"] for g in lanes[0]["groups"]] == [1, 2]
    card = lanes[0]["groups"][0]["cards"][0]
    assert card["criteria"][0]["verdict"] == "fail"
    assert card["attempts"][0]["exit_code"] == 2
    html = dashboard.render_parts(run.id, ["lanes"])["lanes"]
    assert "saw nope" in html and "wrong flag" in html and "exit 2" in html
    assert 'id="lane-0-2"' in html


def test_abandoned_run_shows_partial_result_and_next_moves(client, user, run):
    run.status = RunStatus.FAILED
    run.final_result = {
        "task_id": "t",
        "summary": "gave up",
        "directive": "abandon",
        "output": "[exit code 1]\nboom",
        "loss": {"D": 1, "P": 0.5, "Omega": 0.9, "L": 0.9},
    }
    run.save()
    bus.send(
        run,
        "R2",
        "User",
        "NextMoves",
        {
            "task_id": "t",
            "accomplished": "listed files",
            "next_moves": ["check the path", "ask for <access>"],
        },
    )
    client.force_login(user)
    final = element(page(client, run), "final-result")
    assert "listed files" in final and "ask for &lt;access&gt;" in final
    assert 'class="exit-code">1<' in final and "boom" in final


def test_every_message_type_has_a_one_line_summary():
    from roles.routes import MESSAGE_TYPES

    assert MESSAGE_TYPES <= set(dashboard.SUMMARIES)
    line = dashboard.summarise(
        "ExecutionResult",
        {
            "subtask_id": "s1",
            "status": "completed",
            "output": "[exit code 0]\nhi\n",
        },
    )
    assert line == "s1 completed: hi"
    assert dashboard.summarise("Nope", {"a": 1}) == '{"a": 1}'
    assert dashboard.summarise("PlanDirective", {"loss": "bad"}).startswith("{")
    assert len(dashboard.summarise("TaskSpec", {"intent": "x" * 999})) <= 160


def test_bus_rows_show_sender_recipient_and_summary(client, user, run):
    msg = bus.send(run, "User", "R6", "AuditQuery", {})
    client.force_login(user)
    row = element(page(client, run), f"msg-{msg.id}")
    assert "User → R6" in row and "on-demand audit requested" in row
