"""The growth curves bench: each measure prints its figures and adds its point."""

from __future__ import annotations

import pytest
from django.test import Client

from bench import curves

pytestmark = pytest.mark.django_db


def figures(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("figure")]


def test_each_measure_prints_its_figures_and_adds_a_point(user, staff_user, capsys):
    client = Client()
    client.force_login(user)
    drawn = curves.new_curves()

    curves.measure_messages(client, user, (20,), drawn)
    curves.measure_runs(client, user, (30,), drawn)
    staff = Client()
    staff.force_login(staff_user)
    curves.measure_audit(staff, (12, 125), drawn)

    assert figures(capsys.readouterr().out) == [
        "curves.run_page@20msg.cpu",
        "curves.run_page@20msg.wall",
        "curves.catch_up@20msg.cpu",
        "curves.catch_up@20msg.wall",
        "curves.run_list@30runs.cpu",
        "curves.run_list@30runs.wall",
        "curves.audit_verify@12.cpu",
        "curves.audit_verify@12.wall",
        "curves.audit_verify@12.peak",
        "curves.audit_page@12+100.cpu",
        "curves.audit_page@12+100.wall",
        "curves.audit_verify@125.cpu",
        "curves.audit_verify@125.wall",
        "curves.audit_verify@125.peak",
        "curves.audit_page@125+100.cpu",
        "curves.audit_page@125+100.wall",
    ]
    assert [x for x, _ in drawn["paint"].points] == [20]
    assert [x for x, _ in drawn["verify"].points] == [12, 125]
    assert [x for x, _ in drawn["audit_page"].points] == [12, 125]
    assert user.runs.count() == 30


def test_a_run_holds_whole_rounds_of_messages_up_to_its_size(user):
    run = curves.fill_run(user, 25)

    types = list(run.messages.order_by("id").values_list("type", flat=True))

    assert len(types) == 25
    assert types[:10] == types[10:20]
    assert run.round == 2


def test_the_svg_draws_one_line_per_measured_curve():
    drawn = curves.new_curves()
    drawn["paint"].points[:] = [(100, 5.0), (1000, 6.0)]
    drawn["verify_mb"].points[:] = [(10, 4.5), (100, 4.6)]

    svg = curves.curves_svg(drawn, "a note")

    assert svg.startswith("<svg") and svg.count("<polyline") == 2
    assert "run page first paint (messages)" in svg and "a note" in svg
    assert "1,000" in svg
