"""An ordinary user's run cannot reach the app, its secrets or another user's work.

Real worker, real database, the offline model (each line is a shell command).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.urls import reverse

from artoo_web import runs, runtime
from artoo_web.models import BusMessage, Run
from tests.conftest import wait_until
from tests.sandbox.test_containment import living


def finished(run: Run, timeout: float = 120) -> Run:
    def done():
        fresh = Run.objects.get(id=run.id)
        return fresh if fresh.is_terminal else None

    return wait_until(done, timeout=timeout)


def evidence(run: Run) -> str:
    return "\n".join(
        entry
        for m in BusMessage.objects.filter(run=run, type="ExecutionResult")
        for entry in m.payload.get("tool_calls", [])
    )


def outputs(run: Run) -> str:
    return "\n".join(
        str(m.payload.get("output"))
        for m in BusMessage.objects.filter(run=run, type="ExecutionResult")
    )


@pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3",
    reason="the escalation goes through the SQLite file",
)
def test_run_cannot_make_its_user_a_superuser(celery_worker, user):
    database = settings.DATABASES["default"]["TEST"]["NAME"]
    assert os.path.exists(database)
    run = runs.submit(
        user,
        f'sqlite3 {database} "update auth_user set is_staff=1, is_superuser=1 '
        f"where username='{user.username}'\"",
    )
    run = finished(run)
    assert run.final_result["directive"] == "abandon"
    user.refresh_from_db()
    assert not user.is_superuser and not user.is_staff
    assert "unable to open database" in evidence(run)


def test_run_cannot_read_the_data_dir_or_the_app_environment(celery_worker, user):
    probe = settings.DATA_DIR / "probe_secret"
    probe.write_text("data-dir-secret\n")
    try:
        run = runs.submit(user, f"cat {probe}")
        run = finished(run)
        assert run.final_result["directive"] == "abandon"
        assert "data-dir-secret" not in evidence(run)
        assert "No such file or directory" in evidence(run)
    finally:
        probe.unlink()
    run = finished(runs.submit(user, "env"))
    assert run.status == "done"
    shown = outputs(run) + evidence(run)
    assert "PATH=" in shown
    assert settings.SECRET_KEY not in shown
    assert "REDIS_URL" not in shown and "SECRET_KEY" not in shown


def test_one_users_run_cannot_read_anothers_workspace(celery_worker, user, other_user):
    mine = finished(runs.submit(user, "echo only-alice > s.txt"))
    assert mine.status == "done"
    target = runtime.workspace_for(mine) / "s.txt"
    assert target.read_text() == "only-alice\n"
    theirs = finished(
        runs.submit(
            other_user,
            f"cat {target}\n& cat ../../user-{user.id}/{mine.id}/s.txt",
        )
    )
    assert theirs.final_result["directive"] == "abandon"
    assert "only-alice" not in evidence(theirs) + outputs(theirs)


def test_processes_a_run_starts_do_not_outlive_it(celery_worker, user):
    run = finished(
        runs.submit(
            user, "setsid sleep 100014 &\n& nohup sleep 100015 > /dev/null 2>&1 &"
        )
    )
    assert run.status == "done"
    assert wait_until(lambda: not living("sleep 10001"), timeout=10)
    # Removed when the run's end commits, a moment after the status is visible.
    scratch = settings.SANDBOX_DIR / str(run.id)
    assert wait_until(lambda: not scratch.exists(), timeout=10)


def test_shared_area_is_shared_by_one_users_runs_only(
    celery_worker, user, other_user, settings
):
    settings.ARTOO_USER_SHARED = True
    shared = runtime.shared_area(user.id)
    (shared / "note.txt").unlink(missing_ok=True)
    first = finished(runs.submit(user, f"echo handed-over > {shared}/note.txt"))
    assert first.status == "done", evidence(first)
    assert (shared / "note.txt").read_text() == "handed-over\n"
    second = finished(runs.submit(user, f"cat {shared}/note.txt"))
    assert second.status == "done"
    assert "handed-over" in outputs(second)
    stranger = finished(runs.submit(other_user, f"cat {shared}/note.txt"))
    assert stranger.final_result["directive"] == "abandon"
    assert "handed-over" not in outputs(stranger) + evidence(stranger)


def test_run_page_warns_when_the_sandbox_is_off(client, run, settings):
    settings.ARTOO_SANDBOX = "off"
    client.force_login(run.owner)
    page = client.get(reverse("run-detail", args=[run.id])).content.decode()
    assert "The sandbox is off" in page
    settings.ARTOO_SANDBOX = "on"
    page = client.get(reverse("run-detail", args=[run.id])).content.decode()
    assert "The sandbox is off" not in page


def test_web_tools_are_not_offered_when_the_web_is_out_of_reach(monkeypatch):
    from roles.tools import web

    for reachable, offered in ((False, ["search", "fetch_url"]), (True, [])):
        monkeypatch.setattr(web, "is_reachable", lambda url, r=reachable: r)
        monkeypatch.setitem(runtime._web, "checked", -1e9)
        assert runtime.unavailable_tools() == offered
