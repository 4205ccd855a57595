"""A long run's page shows its newest rounds in full and folds the older ones."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from artoo_web import frames
from artoo_web.dashboard.messages import ROUNDS_SHOWN
from artoo_web.models import BusMessage

pytestmark = pytest.mark.django_db

ROUNDS = ROUNDS_SHOWN + 5
LOSS = {"D": 0.5, "P": 0.5, "Omega": 0.2, "L": 0.6}


def play(run, rounds: int) -> None:
    """Store ``rounds`` GGS rounds: a recall, a subtask, its outcome, a directive."""
    messages = []
    for r in range(1, rounds + 1):
        sid = f"r{r}-s1"
        status = "failed" if r == 1 else "success"
        directive = "change_path" if r == 1 else "refine"
        messages += [
            BusMessage(
                run=run,
                round=r,
                sender="R5",
                recipient="R2",
                type="MemoryRecall",
                payload={"task_id": "t", "space": "s", "entity": "e"},
            ),
            BusMessage(
                run=run,
                round=r,
                sender="R2",
                recipient="R3",
                type="SubTask",
                payload={"subtask_id": sid, "intent": f"do round {r}"},
            ),
            BusMessage(
                run=run,
                round=r,
                sender="R4b",
                recipient="R7",
                type="SubTaskOutcome",
                payload={"subtask_id": sid, "status": status},
            ),
            # R7 bumps the round before sending: this directive judges round r.
            BusMessage(
                run=run,
                round=r + 1,
                sender="R7",
                recipient="R2",
                type="PlanDirective",
                payload={
                    "task_id": "t",
                    "loss": LOSS,
                    "prev_directive": "init" if r == 1 else "refine",
                    "directive": directive,
                    "grad_l": -0.1,
                    "rationale": f"judged round {r}",
                },
            ),
        ]
    BusMessage.objects.bulk_create(messages)
    run.task_id = "t"
    run.round = rounds + 1
    run.save()


def lane_rounds(html: str) -> list[int]:
    return [int(r) for r in re.findall(r'id="lanes-round-(\d+)"', html)]


def timeline_rounds(html: str) -> list[int]:
    return [int(r) for r in re.findall(r'<tr id="round-(\d+)"', html)]


def chart_rounds(html: str) -> list[int]:
    return [int(r) for r in re.findall(r">round (\d+)</text>", html)]


def assert_folded(lanes: str, timeline: str, chart: str) -> None:
    newest = list(range(ROUNDS - ROUNDS_SHOWN + 1, ROUNDS + 1))
    folded_to = ROUNDS - ROUNDS_SHOWN
    assert lane_rounds(lanes) == newest[::-1]
    assert f"do round {ROUNDS}" in lanes and "do round 1<" not in lanes
    assert (
        f"Rounds 1–{folded_to} folded: {folded_to} subtasks "
        f"(success {folded_to - 1}, failed 1)."
    ) in lanes
    assert timeline_rounds(timeline) == newest
    assert "judged round 1<" not in timeline
    assert (
        f"Rounds 1–{folded_to} folded: {folded_to} decisions "
        f"(refine {folded_to - 1}, change_path 1)."
    ) in timeline
    assert chart_rounds(chart) == newest
    assert (
        f"Rounds 1–{folded_to} folded: the chart plots the newest "
        f"{ROUNDS_SHOWN} decisions."
    ) in chart


def test_the_page_shows_the_newest_rounds_and_folds_the_rest(client, user, run):
    play(run, ROUNDS)
    client.force_login(user)

    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    start = html.index('<div id="lanes"')
    lanes = html[start : html.index("</section>", start)]
    timeline = html[html.index('<div id="ggs-timeline"') : html.index("</table>")]
    chart = html[html.index('<figure id="loss-chart"') : html.index("</figure>")]
    assert_folded(lanes, timeline, chart)


def test_the_pushed_parts_fold_the_same_rounds(user, run):
    play(run, ROUNDS)

    swaps = frames.render_swaps(run.id, [("message", "PlanDirective")])
    swaps |= frames.render_swaps(run.id, [("message", "SubTask")])

    assert_folded(swaps["lanes"], swaps["ggs-timeline"], swaps["loss-chart"])


def test_a_run_of_at_most_the_shown_rounds_folds_nothing(client, user, run):
    play(run, ROUNDS_SHOWN)
    client.force_login(user)

    html = client.get(reverse("run-detail", args=[run.id])).content.decode()

    shown = list(range(1, ROUNDS_SHOWN + 1))
    assert lane_rounds(html) == shown[::-1]
    assert timeline_rounds(html) == shown
    assert chart_rounds(html) == shown
    assert "folded" not in html
