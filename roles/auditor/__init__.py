"""R6 Auditor: a read-only tap on the bus that reports to the human operator.

``auditor`` holds the Auditor, ``checks`` its detection rules, ``state`` the
window and per-run trackers they update, ``envelope`` the parsing of bus
envelopes and ``config`` the thresholds.
"""

from roles.auditor.auditor import Auditor
from roles.auditor.config import AuditConfig
from roles.auditor.envelope import is_audit_query

__all__ = ["AuditConfig", "Auditor", "is_audit_query"]
