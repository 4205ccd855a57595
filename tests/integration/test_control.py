"""A run's control strategy, end to end: GGS, a plain retry, a single round.

One script for every strategy: R2's first plan fails on an environmental step,
its second one passes; the strategy decides what R2 hears and whether there is
a second round at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from artoo_web import api_tokens, runs
from artoo_web.models import BusMessage, Run
from roles.ggs import control
from tests.integration.test_pipeline_llm import (
    TASK_SPEC,
    accept,
    execute,
    judge,
    plan,
    text_of,
)
from tests.integration.test_pipeline_offline import finished, transitions
from tests.llm_server import ScriptedLLMServer

ROOT = Path(__file__).resolve().parents[2]
TASK = "check the server"


@pytest.fixture
def model(monkeypatch):
    with ScriptedLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ARTOO_LLM_RETRIES", "1")
        server.default_reply(json.dumps(TASK_SPEC), role="R1")
        server.responder(execute, role="R3")
        server.responder(judge, role="R4a")
        server.responder(accept, role="R4b")
        server.reply("R2", plan("env-step first"))
        server.reply("R2", plan("ok-step second"))
        yield server


def decisions(run: Run) -> list[dict]:
    rows = BusMessage.objects.filter(
        run=run, sender="R7", type__in=("PlanDirective", "FinalResult")
    ).order_by("id")
    return [m.payload for m in rows]


def replan_prompt(model) -> str:
    plans = [r for r in model.requests_for("R2") if "TaskSpec" in text_of(r)]
    assert len(plans) >= 2, "R2 was never asked to replan"
    return text_of(plans[1])


# --- the pipeline under each strategy ---------------------------------------


@pytest.mark.slow
def test_retry_tells_r2_only_that_the_attempt_failed_then_accepts(
    celery_worker, user, model
):
    run = finished(runs.submit(user, TASK, control="retry"), timeout=90)

    assert run.status == "done" and run.control == "retry"
    assert transitions(run) == ["init→retry", "retry→accept"]
    retry, final = decisions(run)
    assert retry["control"] == final["control"] == "retry"
    assert retry["blocked_tools"] == retry["blocked_targets"] == []
    assert retry["budget_pressure"] == 0.0
    gap = BusMessage.objects.get(run=run, type="ReplanRequest").payload["gap_summary"]
    prompt = replan_prompt(model)
    assert control.retry_text(gap) in prompt
    assert prompt.count("The previous attempt failed") == 1
    for absent in ("PlanDirective", "Directive semantics", "MUST NOT (GGS"):
        assert absent not in prompt


@pytest.mark.slow
def test_warming_retries_with_the_planner_and_executor_warmer_each_round(
    celery_worker, user, model
):
    run = finished(runs.submit(user, TASK, control="warming"), timeout=90)

    assert run.status == "done" and run.control == "warming"
    assert transitions(run) == ["init→retry", "retry→accept"]
    assert decisions(run)[0]["control"] == "warming"
    plans = [r for r in model.requests_for("R2") if "TaskSpec" in text_of(r)]
    assert [r.body.get("temperature") for r in plans[:2]] == [0.0, 0.167]
    executed = {r.body.get("temperature") for r in model.requests_for("R3")}
    assert {0.0, 0.167} <= executed
    # The validators sample as under every other strategy.
    assert all("temperature" not in r.body for r in model.requests_for("R4b"))


@pytest.mark.slow
def test_single_ends_the_same_script_after_one_round(celery_worker, user, model):
    run = finished(runs.submit(user, TASK, control="single"), timeout=90)

    assert run.status == "failed" and run.control == "single"
    assert transitions(run) == ["init→abandon"]
    assert BusMessage.objects.filter(run=run, type="DispatchManifest").count() == 1
    final = run.final_result
    assert final["control"] == "single"
    assert final["reason"].startswith("It was set to run one round only")
    # A plan of one subtask runs the request itself: the summary names it.
    assert f"Failed: {TASK}" in final["summary"]


@pytest.mark.slow
def test_a_run_that_names_no_strategy_is_steered_by_ggs(celery_worker, user, model):
    run = finished(runs.submit(user, TASK), timeout=90)

    assert run.control == "ggs"
    assert transitions(run) == ["init→change_path", "change_path→accept"]
    assert {d["control"] for d in decisions(run)} == {"ggs"}
    prompt = replan_prompt(model)
    assert "PlanDirective" in prompt and "Directive semantics" in prompt
    assert "The previous attempt failed" not in prompt


@pytest.mark.slow
def test_the_cli_runs_the_strategy_it_is_given_and_prints_it(
    celery_worker, user, model
):
    out = StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command(
            "artoo",
            TASK,
            "--user",
            user.username,
            "--control",
            "single",
            "--next-moves-wait",
            "0",
            "--timeout",
            "90",
            stdout=out,
        )

    lines = out.getvalue().splitlines()
    run = Run.objects.get()
    assert exit_.value.code == 1
    assert run.control == "single"
    assert lines[1] == "control single"
    final = [line for line in lines if "R7 → User FinalResult" in line]
    assert len(final) == 1 and "[single] init→abandon" in final[0]


# --- choosing the strategy ---------------------------------------------------


@pytest.mark.django_db
def test_the_default_strategy_comes_from_artoo_control(user, settings, purge_queues):
    settings.ARTOO_CONTROL = "retry"

    assert runs.submit(user, "echo hi").control == "retry"
    assert runs.submit(user, "echo hi", control="single").control == "single"


@pytest.mark.django_db
def test_an_unknown_strategy_creates_no_run(user):
    with pytest.raises(ValueError, match="unknown control strategy 'best'"):
        runs.submit(user, "echo hi", control="best")
    assert not Run.objects.exists()


@pytest.fixture
def auth(user):
    _, secret = api_tokens.create(user)
    return {"Authorization": f"Bearer {secret}"}


def api_post(client, auth, body: dict):
    return client.post(
        "/api/runs",
        data=json.dumps(body),
        content_type="application/json",
        headers=auth,
    )


@pytest.mark.django_db
def test_the_api_keeps_the_strategy_and_reports_it(client, auth, purge_queues):
    created = api_post(client, auth, {"input": "echo hi", "control": "retry"})
    plain = api_post(client, auth, {"input": "echo hi"})

    assert created.status_code == 201 and created.json()["control"] == "retry"
    assert Run.objects.get(id=created.json()["id"]).control == "retry"
    assert plain.json()["control"] == "ggs"
    shown = client.get(f"/api/runs/{created.json()['id']}", headers=auth)
    assert shown.json()["control"] == "retry"


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["best", "", None, 1, ["retry"], "RETRY"])
def test_the_api_refuses_an_unknown_strategy_and_creates_nothing(client, auth, value):
    response = api_post(client, auth, {"input": "echo hi", "control": value})

    assert response.status_code == 400
    assert response.json() == {
        "error": "'control' must be one of ggs, retry, single, warming."
    }
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_form_offers_the_strategies_under_advanced(client, user, settings):
    settings.ARTOO_CONTROL = "retry"
    client.force_login(user)

    page = client.get(reverse("run-list")).content.decode()

    advanced = page[page.index('id="run-advanced"') :]
    assert "<summary>Advanced</summary>" in advanced
    for name in control.NAMES:
        assert f'<option value="{name}"' in advanced
    assert '<option value="retry" selected>' in advanced


@pytest.mark.django_db
def test_the_form_keeps_the_strategy_and_the_run_page_shows_it(
    client, user, purge_queues
):
    client.force_login(user)

    response = client.post(
        reverse("run-create"), {"raw_input": "echo hi", "control": "single"}
    )

    run = Run.objects.get()
    assert response.status_code == 302 and run.control == "single"
    page = client.get(reverse("run-detail", args=[run.id])).content.decode()
    assert '<span id="run-control" class="chip"' in page
    assert 'title="single round (no replanning)">single</span>' in page


@pytest.mark.django_db
def test_the_form_refuses_an_unknown_strategy_and_creates_nothing(client, user):
    client.force_login(user)

    response = client.post(
        reverse("run-create"), {"raw_input": "echo hi", "control": "best"}
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert "Select a valid choice. best is not one of the available choices." in page
    assert 'id="run-advanced" open' in page
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_admin_lists_and_filters_runs_by_strategy(client, admin_user):
    Run.objects.create(owner=admin_user, raw_input="a", control="retry")
    Run.objects.create(owner=admin_user, raw_input="b", control="single")
    client.force_login(admin_user)

    page = client.get("/admin/artoo_web/run/?control__exact=retry").content.decode()

    assert 'column-control">' in page
    assert '<td class="field-control">retry</td>' in page
    assert '<td class="field-control">single</td>' not in page


@pytest.mark.django_db
def test_the_cli_refuses_an_unknown_strategy_and_creates_nothing(user):
    with pytest.raises(CommandError, match="invalid choice: 'best'"):
        call_command("artoo", "echo hi", "--user", user.username, "--control", "best")
    assert not Run.objects.exists()


def test_an_unknown_artoo_control_stops_start_up_with_a_clear_error(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "x",
        "ARTOO_DATA_DIR": str(tmp_path),
        "ARTOO_CONTROL": "gradient",
        "DJANGO_SETTINGS_MODULE": "artoo_web.settings",
    }

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    said = "ARTOO_CONTROL must be one of ggs, retry, single, warming, not 'gradient'"
    assert said in done.stderr
