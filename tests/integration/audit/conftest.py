"""Fixtures for the Auditor: an in-process loop in a thread, a real subprocess."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction

from artoo_web import bus
from artoo_web.auditlog import AuditCursor
from artoo_web.models import BusMessage

ROOT = Path(__file__).resolve().parents[3]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return Clock()


def send(run, sender, recipient, type_, payload=None, **kwargs) -> BusMessage:
    """Send one message through the bus and commit it (publishes it)."""
    with transaction.atomic():
        return bus.send(run, sender, recipient, type_, payload or {}, **kwargs)


def store(run, sender, recipient, type_, payload) -> BusMessage:
    """Store a message bound for a worker without enqueuing it (no worker here)."""
    return BusMessage.objects.create(
        run=run, sender=sender, recipient=recipient, type=type_, payload=payload
    )


def clarification(run, n: int = 0) -> BusMessage:
    """Send an on-route message that no worker handles (R1 → User)."""
    return send(run, "R1", "User", "ClarificationRequest", {"question": f"q{n}?"})


class AuditorThread:
    """Run ``AuditProcess.run_forever`` in a thread of this process."""

    def __init__(self, settings=None, clock=None) -> None:
        from artoo_web.auditor import AuditProcess

        kwargs = {"clock": clock} if clock else {}
        self.process = AuditProcess(settings, **kwargs)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None
        self.thread.start()

    def _run(self) -> None:
        try:
            self.process.run_forever()
        except BaseException as exc:  # surfaced by stop()
            self.error = exc
        finally:
            connection.close()

    def stop(self) -> None:
        self.process.stop.set()
        self.thread.join(timeout=20)
        assert not self.thread.is_alive(), "the auditor thread did not stop"
        if self.error:
            raise self.error


@pytest.fixture
def auditor_thread():
    started: list[AuditorThread] = []

    def start(settings=None, clock=None) -> AuditorThread:
        started.append(AuditorThread(settings, clock))
        return started[-1]

    yield start
    for auditor in started:
        auditor.process.stop.set()
        auditor.thread.join(timeout=20)


def cursor_at() -> int:
    return AuditCursor.objects.values_list("last_message_id", flat=True).first() or 0


@pytest.fixture
def subprocess_env(transactional_db):
    """Environment for ``manage.py`` subprocesses that use this test database."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "tests.integration.audit.subprocess_settings"
    env["ARTOO_AUDIT_TEST_DB"] = str(connection.settings_dict["NAME"])
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """Return the next stdout line of ``proc``, failing after ``timeout`` s."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no output from {proc.args} within {timeout} s"
    return proc.stdout.readline()


@pytest.fixture
def auditor_process(subprocess_env):
    """Start ``manage.py audit`` against the test database; SIGTERM it after."""
    proc = subprocess.Popen(
        manage("audit"),
        cwd=ROOT,
        env=subprocess_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = read_line(proc, timeout=30)
        assert line.startswith("auditing the bus from message"), line
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
