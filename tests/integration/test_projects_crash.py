"""A worker killed mid-project: the project resumes from its stored state.

Real worker processes reach the scripted model over HTTP; the test runs the
outbox sweeper (as beat would) once the dead worker's delivery lease lapsed.
"""

from __future__ import annotations

import json
import signal

import pytest

from artoo_web import bus, projects, topics
from artoo_web.handlers import HANDLERS
from artoo_web.models import BusMessage, Project, Run
from tests.conftest import wait_until
from tests.integration.test_projects_flow import (
    ended,
    implement,
    model,  # noqa: F401 (a fixture)
    planner,
    scope,
    types,
    verdict,
)
from tests.integration.test_worker_crash import start_worker, stop, worker_env  # noqa: F401

pytestmark = pytest.mark.slow


def test_a_worker_killed_mid_project_resumes_and_runs_no_task_twice(
    worker_env,  # noqa: F811
    model,  # noqa: F811
    user,
    tmp_path,
):
    env = {**worker_env, **model.env(), "ARTOO_LLM_RETRIES": "1"}
    scope(model, "User can read notes")
    implement(model, "proj-1.txt")
    implement(model, "proj-2.txt")
    planner(model, "milestone_done")
    verdict(model, "milestone_complete")
    # The worker dies while QA judges the first task.
    model.reply("QA", json.dumps({"passed": True}), delay_s=15)
    memory = start_worker(env, "memory", tmp_path / "memory.log")
    first = start_worker(env, "pipeline", tmp_path / "first.log")
    second = None
    try:
        project = projects.create(user, "Write two notes files")
        wait_until(lambda: model.requests_for("QA"), timeout=90, what="QA asked")
        stop(first, signal.SIGKILL)
        second = start_worker(env, "pipeline", tmp_path / "second.log")
        pending = BusMessage.objects.filter(project=project, delivered_at=None)
        wait_until(
            lambda: not any(bus.is_leased(topics.lease_key(m.id)) for m in pending),
            timeout=10,
            what="the dead worker's delivery leases lapse",
        )
        assert bus.sweep(0, HANDLERS) >= 1
        project = ended(Project.objects.get(id=project.id), timeout=120)
    finally:
        for proc in (first, second, memory):
            if proc is not None:
                stop(proc)
    assert project.status == "complete", project.reason
    dispatched = Run.objects.filter(project=project).order_by("created_at")
    assert [r.dispatch_id for r in dispatched] == ["t1-a1", "t2-a1"]
    assert len(types(project, "QAReply")) == 2
    assert [m.payload["entry"]["task_id"] for m in types(project, "RecordDone")] == [
        "t1",
        "t2",
    ]
