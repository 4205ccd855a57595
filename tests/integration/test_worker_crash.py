"""A pipeline worker killed mid-run: the run still finishes, with one FinalResult.

Real worker processes share this test session's database; the outbox sweeper
(run here by the test, as beat would) hands the dead worker's message to the
new worker once the dead worker's delivery lease has expired.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from artoo_web import bus, runs, topics
from artoo_web.handlers import HANDLERS
from artoo_web.models import BusMessage, Run
from tests.conftest import wait_until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker_env(transactional_db, purge_queues, tmp_path):
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.subprocess_settings",
        ARTOO_TEST_DB_NAME=str(connection.settings_dict["NAME"]),
        PYTHONPATH=str(ROOT),
        ARTOO_LEASE_S="2",
        PYTHONUNBUFFERED="1",
        ARTOO_WORKSPACE=str(tmp_path / "workspace"),
        ARTOO_MEMORY_PATH=str(tmp_path / "memory"),
    )
    return env


def answers(node: str) -> bool:
    from artoo_web.celery import app

    return bool(app.control.ping(destination=[node], timeout=0.5))


def start_worker(env, queue: str, log: Path) -> subprocess.Popen:
    node = f"{queue}-{log.stem}@{socket.gethostname()}"
    cmd = [
        str(Path(sys.executable).parent / "celery"),
        "-A",
        "artoo_web",
        "worker",
        "--pool",
        "threads",
        "-c",
        "4",
        "-Q",
        queue,
        "-n",
        f"{queue}-{log.stem}@%h",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(lambda: answers(node), timeout=60)
    except AssertionError:
        stop(proc, signal.SIGKILL)
        raise
    return proc


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)


def test_killed_worker_mid_run_still_finishes_with_one_final_result(
    worker_env, user, tmp_path, settings
):
    settings.WORKSPACE = tmp_path / "workspace"
    memory = start_worker(worker_env, "memory", tmp_path / "memory.log")
    first = start_worker(worker_env, "pipeline", tmp_path / "first.log")
    second = None
    try:
        run = runs.submit(user, "sleep 3 && echo slow\n& echo fast")
        wait_until(
            lambda: BusMessage.objects.filter(run=run, type="ExecutionResult").exists(),
            timeout=60,
        )
        stop(first, signal.SIGKILL)
        second = start_worker(worker_env, "pipeline", tmp_path / "second.log")
        pending = BusMessage.objects.filter(run=run, delivered_at__isnull=True)
        wait_until(
            lambda: not any(bus.is_leased(topics.lease_key(m.id)) for m in pending),
            timeout=10,
            what="the dead worker's delivery leases lapse",
        )
        assert bus.sweep(0, HANDLERS) >= 1
        run = wait_until(
            lambda: Run.objects.filter(id=run.id, status="done").first(), timeout=60
        )
        assert BusMessage.objects.filter(run=run, type="FinalResult").count() == 1
        pending = BusMessage.objects.filter(run=run, delivered_at__isnull=True)
        try:
            wait_until(lambda: not pending.exists(), timeout=30)
        except AssertionError:
            raise AssertionError(
                list(pending.values_list("type", "recipient"))
            ) from None
        assert BusMessage.objects.filter(run=run, type="SubTaskOutcome").count() == 2
    finally:
        for proc in (first, second, memory):
            if proc is not None:
                stop(proc)
