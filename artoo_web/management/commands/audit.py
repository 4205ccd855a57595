import json
import signal
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from artoo_web.auditlog import verify_chain
from artoo_web.auditor import AuditProcess, AuditSettings, ask_now


class Command(BaseCommand):
    # The Auditor must run, and --verify must answer, even when the web layer
    # fails its checks: oversight does not depend on what it oversees.
    requires_system_checks = []
    help = (
        "Run the R6 Auditor over the bus (default), process what is pending "
        "(--once), ask the running Auditor for a report (--now), or check the "
        "audit log's hash chain (--verify)."
    )

    def add_arguments(self, parser):
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--once", action="store_true", help="process pending messages and exit"
        )
        mode.add_argument(
            "--now", action="store_true", help="send an AuditQuery, print the report"
        )
        mode.add_argument(
            "--verify", action="store_true", help="verify the audit log's hash chain"
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=5.0,
            help="seconds --now waits for the report (default 5)",
        )

    def handle(self, *args, once, now, verify, timeout, **options):
        if verify:
            return self.verify()
        if now:
            return self.ask(timeout)
        return self.audit(once=once)

    def audit(self, *, once: bool) -> None:
        process = AuditProcess(
            AuditSettings(
                window_s=settings.ARTOO_AUDIT_WINDOW_S,
                fanin_deadline_s=settings.ARTOO_AUDIT_FANIN_DEADLINE_S,
            )
        )
        if once:
            count = process.run_once()
            self.stdout.write(f"audited {count} messages; cursor at {process.cursor}")
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: process.stop.set())
        self.stdout.write(f"auditing the bus from message {process.cursor}")
        self.stdout.flush()
        process.run_forever()
        self.stdout.write(f"auditor stopped at message {process.cursor}")

    def ask(self, timeout: float) -> None:
        if timeout <= 0:
            raise CommandError("--timeout must be positive")
        started = time.monotonic()
        try:
            query, report = ask_now(timeout)
        except TimeoutError as exc:
            raise CommandError(
                f"no auditor answered AuditQuery #{exc.args[0]} within {timeout:g} s; "
                "is `manage.py audit` running?"
            ) from None
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"AuditReport answering AuditQuery #{query.id} in {elapsed:.2f} s"
        )
        self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))

    def verify(self) -> None:
        count, broken = verify_chain()
        if broken:
            self.stderr.write(broken)
            sys.exit(1)
        self.stdout.write(f"OK: {count} events verified")
