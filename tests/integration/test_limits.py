"""Per-user limits on submitting runs, the same on every road in.

Over a limit the API answers 429 with JSON and Retry-After, the form shows the
message, the CLI prints it and exits 1; nothing is created, and other users are
unaffected.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from artoo_web import api_tokens, runs
from artoo_web.models import Run, RunStatus, TraceEvent

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def limits(settings):
    """Set the two limits: ``limits(active, per_minute)``."""

    def set_limits(active: int, per_minute: int) -> None:
        settings.ARTOO_USER_ACTIVE_RUNS = active
        settings.ARTOO_USER_RUNS_PER_MINUTE = per_minute

    return set_limits


def token_of(user) -> dict:
    _, secret = api_tokens.create(user)
    return {"Authorization": f"Bearer {secret}"}


def post_run(client, headers, text="echo hi"):
    return client.post(
        "/api/runs",
        data={"input": text},
        content_type="application/json",
        headers=headers,
    )


def active_runs(user, count: int) -> list[Run]:
    return [Run.objects.create(owner=user, raw_input="sleep 60") for _ in range(count)]


def created() -> tuple[int, int]:
    return Run.objects.count(), TraceEvent.objects.count()


@pytest.mark.django_db
def test_the_api_refuses_a_run_over_the_active_limit_with_429(client, user, limits):
    limits(active=2, per_minute=0)
    active_runs(user, 2)
    before = created()
    response = post_run(client, token_of(user))
    assert response.status_code == 429
    body = response.json()
    assert body["limit"] == "active_runs"
    assert "Too many active runs: 2 of 2 allowed" in body["error"]
    assert int(response["Retry-After"]) == body["retry_after"] > 0
    assert created() == before


@pytest.mark.django_db
def test_the_api_refuses_a_run_over_the_minute_limit_until_one_ages_out(
    client, user, limits
):
    limits(active=0, per_minute=2)
    headers = token_of(user)
    assert [post_run(client, headers).status_code for _ in range(2)] == [201, 201]
    before = created()
    response = post_run(client, headers)
    assert response.status_code == 429
    assert response.json()["limit"] == "runs_per_minute"
    assert 1 <= int(response["Retry-After"]) <= 60
    assert created() == before
    # Once the oldest submission is over a minute old, one more is accepted.
    oldest = Run.objects.order_by("created_at").first()
    Run.objects.filter(id=oldest.id).update(
        created_at=timezone.now() - timedelta(seconds=61)
    )
    assert post_run(client, headers).status_code == 201


@pytest.mark.django_db
def test_finished_runs_do_not_count_as_active(client, user, limits):
    limits(active=2, per_minute=0)
    for run in active_runs(user, 2):
        run.status = RunStatus.DONE
        run.save()
    assert post_run(client, token_of(user)).status_code == 201


@pytest.mark.django_db
def test_another_user_is_unaffected_by_one_users_limit(
    client, user, other_user, limits
):
    limits(active=1, per_minute=1)
    active_runs(user, 1)
    assert post_run(client, token_of(user)).status_code == 429
    response = post_run(client, token_of(other_user))
    assert response.status_code == 201
    assert Run.objects.get(id=response.json()["id"]).owner == other_user


@pytest.mark.django_db
def test_limits_of_zero_are_off(client, user, limits):
    limits(active=0, per_minute=0)
    active_runs(user, 40)
    headers = token_of(user)
    assert {post_run(client, headers).status_code for _ in range(35)} == {201}
    assert Run.objects.filter(owner=user).count() == 75


@pytest.mark.django_db
def test_the_form_shows_the_refusal_on_the_page_and_creates_nothing(
    client, user, limits
):
    limits(active=1, per_minute=0)
    active_runs(user, 1)
    client.force_login(user)
    before = created()
    response = client.post(reverse("run-create"), {"raw_input": "echo kept text"})
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Too many active runs: 1 of 1 allowed" in page
    assert 'id="run-form"' in page and "echo kept text" in page
    assert created() == before


@pytest.mark.django_db
def test_the_htmx_form_gets_the_refusal_in_its_fragment(client, user, limits):
    limits(active=0, per_minute=1)
    client.force_login(user)
    url, hx = reverse("run-create"), {"HX-Request": "true"}
    assert client.post(url, {"raw_input": "echo one"}, headers=hx).status_code < 400
    assert Run.objects.filter(owner=user).count() == 1
    before = created()
    response = client.post(url, {"raw_input": "echo two"}, headers=hx)
    assert response.status_code == 429
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<form id="run-form"')
    assert "Too many runs submitted in the last minute: 1 of 1 allowed" in fragment
    assert created() == before


@pytest.mark.django_db(transaction=True)
def test_the_cli_prints_the_refusal_and_exits_1(user, purge_queues):
    active_runs(user, 1)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.subprocess_settings",
        "ARTOO_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
        "ARTOO_USER_ACTIVE_RUNS": "1",
    }
    before = created()
    done = subprocess.run(
        [sys.executable, "manage.py", "artoo", "echo hi", "--user", user.username]
        + ["--timeout", "30"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Too many active runs: 1 of 1 allowed" in done.stderr
    assert "run " not in done.stdout
    assert created() == before


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_concurrent_submissions_never_passes_the_active_limit(
    user, other_user, limits, purge_queues
):
    limits(active=5, per_minute=0)
    outcomes: list[str] = []
    barrier = threading.Barrier(12)

    def submit(owner) -> None:
        barrier.wait()
        try:
            runs.submit(owner, "echo burst")
            outcomes.append("created")
        except runs.LimitReached:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(user,)) for _ in range(10)]
    threads += [threading.Thread(target=submit, args=(other_user,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes) == ["created"] * 7 + ["refused"] * 5
    assert Run.objects.filter(owner=user).count() == 5
    assert Run.objects.filter(owner=other_user).count() == 2
