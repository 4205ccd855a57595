"""The real Auditor process: `manage.py audit` against the test database."""

from __future__ import annotations

import json
import re
import signal
import subprocess

import pytest

from artoo_web.auditlog import AuditEventRecord, AuditReportRecord
from tests.conftest import wait_until
from tests.integration.audit.conftest import ROOT, manage, send

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_running_auditor_answers_audit_now(auditor_process, subprocess_env):
    result = subprocess.run(
        manage("audit", "--now", "--timeout", "10"),
        cwd=ROOT,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    first, _, body = result.stdout.partition("\n")
    found = re.match(r"AuditReport answering AuditQuery #(\d+) in ([\d.]+) s", first)
    assert found, first
    query_id, seconds = int(found[1]), float(found[2])
    print(f"\naudit --now answered in {seconds:.2f} s (spec: within 3 s)")
    report = json.loads(body)
    assert report["in_reply_to"] == query_id and report["trigger"] == "on_demand"
    assert AuditReportRecord.objects.filter(in_reply_to=query_id).exists()


def test_audit_now_without_an_auditor_is_a_clear_error(subprocess_env):
    result = subprocess.run(
        manage("audit", "--now", "--timeout", "1"),
        cwd=ROOT,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "no auditor answered AuditQuery #" in result.stderr
    assert "is `manage.py audit` running?" in result.stderr


def test_running_auditor_logs_an_injected_boundary_violation_and_stops_on_sigterm(
    auditor_process, run
):
    msg = send(run, "R3", "User", "FinalResult", _final(), allow_off_route=True)
    row = wait_until(
        lambda: AuditEventRecord.objects.filter(message_id=msg.id).first(), timeout=10
    )
    assert row.anomaly == "boundary_violation"
    assert row.detail == "unexpected R3→User for FinalResult"
    auditor_process.send_signal(signal.SIGTERM)
    assert auditor_process.wait(timeout=20) == 0
    assert f"auditor stopped at message {msg.id}" in auditor_process.stdout.read()


def _final() -> dict:
    return {
        "task_id": "t",
        "summary": "done",
        "loss": {"D": 0.0, "P": 0.0, "Omega": 0.1, "L": 0.04},
        "prev_directive": "init",
        "directive": "accept",
    }
