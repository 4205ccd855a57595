"""The audit panel: this run's anomalies, the latest report, pending audit queries."""

from __future__ import annotations

from django.db.models import Q

from artoo_web.auditlog import AuditEventRecord, AuditReportRecord
from artoo_web.models import BusMessage, Run
from roles.contracts import read_payload

ANOMALY_LIMIT = 50


def audit_context(run: Run) -> dict:
    anomalies = AuditEventRecord.objects.filter(run_id=str(run.id)).filter(
        ~Q(anomaly="none")
    )
    queries = list(
        BusMessage.objects.filter(run=run, type="AuditQuery").values_list(
            "id", flat=True
        )
    )
    answered = set(
        AuditReportRecord.objects.filter(in_reply_to__in=queries).values_list(
            "in_reply_to", flat=True
        )
    )
    report = AuditReportRecord.objects.order_by("-id").first()
    payload = read_payload("AuditReport", report.payload) if report else None
    return {
        "anomalies": list(anomalies.order_by("-id")[:ANOMALY_LIMIT]),
        "report": report,
        "report_payload": payload,
        "audit_pending": [q for q in queries if q not in answered],
    }
