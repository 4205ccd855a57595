"""Stored payloads that no longer validate still show, as far as they go."""

from __future__ import annotations

import pytest
from django.urls import reverse

from artoo_web import dashboard
from artoo_web.models import BusMessage, RunStatus

pytestmark = pytest.mark.django_db


def stored(run, sender, recipient, type_, payload, round=0) -> BusMessage:
    """Write a message as an older version did, past today's contracts."""
    return BusMessage.objects.create(
        run=run,
        round=round,
        sender=sender,
        recipient=recipient,
        type=type_,
        payload=payload,
    )


def test_a_plan_directive_missing_newer_fields_keeps_its_round(user, run):
    run.task_id = "demo"
    run.save()
    loss = {"D": 0.5, "P": 0.5, "Omega": 0.2, "L": 0.6}
    directive = {
        "task_id": "demo",
        "loss": loss,
        "prev_directive": "init",
        "directive": "refine",
        "grad_l": -0.2,
        "rationale": "getting closer",
    }
    stored(run, "R7", "R2", "PlanDirective", directive, round=1)

    rows = dashboard.timeline_rows(run)
    html = dashboard.render_parts(run.id, ["ggs-timeline", "loss-chart"])

    assert (rows[0]["transition"], rows[0]["L"], rows[0]["trend"]) == (
        "init→refine",
        0.6,
        "improving",
    )
    assert "getting closer" in html["ggs-timeline"]
    assert "init→refine: L 0.600" in html["loss-chart"]


def test_a_decision_with_an_unreadable_loss_shows_an_empty_row(user, run):
    directive = {"prev_directive": "init", "directive": "refine", "loss": "bad"}
    stored(run, "R7", "R2", "PlanDirective", directive, round=1)

    rows = dashboard.timeline_rows(run)
    html = dashboard.render_parts(run.id, ["ggs-timeline", "loss-chart"])

    assert (rows[0]["transition"], rows[0]["L"], rows[0]["grad_l"]) == (
        "init→refine",
        None,
        0.0,
    )
    assert 'id="round-0"' in html["ggs-timeline"]
    assert "<svg" in html["loss-chart"]


def test_broken_lane_messages_show_what_they_still_hold(client, user, run):
    subtask = {"subtask_id": "s1", "intent": "list the files", "sequence": "first"}
    stored(run, "R2", "R3", "SubTask", subtask)
    result = {"subtask_id": "s1", "status": "odd", "output": "[exit code 3]\nboom"}
    stored(run, "R3", "R4a", "ExecutionResult", result)
    outcome = {"subtask_id": "s1", "status": "failed", "criteria_verdicts": "none"}
    stored(run, "R4a", "R4b", "SubTaskOutcome", outcome)
    client.force_login(user)

    response = client.get(reverse("run-detail", args=[run.id]))
    lanes = dashboard.lane_rounds(run)

    assert response.status_code == 200
    card = lanes[0]["groups"][0]["cards"][0]
    assert (lanes[0]["groups"][0]["sequence"], card["id"]) == (1, "s1")
    assert card["attempts"][0]["exit_code"] == 3
    html = response.content.decode()
    assert "list the files" in html and "exit 3" in html and "boom" in html
    assert "status-failed" in html


def test_a_direct_answer_shows_as_the_final_result(client, user, run):
    run.status = RunStatus.DONE
    run.final_result = {
        "summary": "Hi there",
        "output": "Hi there",
        "directive": "direct",
    }
    run.save()
    client.force_login(user)

    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    final = html[html.index('id="final-result"') :]
    assert "direct" in final and "Hi there" in final
    assert "exit-code" not in final.split("</section>")[0]
