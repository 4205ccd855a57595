import sys
import time

from django.core.management.base import BaseCommand, CommandError

from artoo_web import projects
from artoo_web.management.commands.artoo import Command as RunCommand
from artoo_web.models import BusMessage, Project

POLL_S = 0.2
DETAIL_FIELDS = ("remit", "task_description", "description", "reason")


def describe(msg: BusMessage) -> str:
    """Return one terminal line for a project's bus message."""
    head = f"#{msg.id:<5} {msg.sender:>8} → {msg.recipient:<8} {msg.type}"
    payload = msg.payload
    for value in (payload.get("scope"), payload.get("plan"), payload.get("entry")):
        if isinstance(value, dict):
            payload = {**payload, **value}
    verdict = payload.get("verdict")
    if isinstance(verdict, dict):
        detail = verdict.get("verdict") or ("passed" if verdict.get("passed") else "")
        return f"{head}  {detail or 'failed: ' + str(verdict.get('feedback'))[:90]}"
    detail = next((payload[k] for k in DETAIL_FIELDS if payload.get(k)), "")
    return f"{head}  {str(detail)[:100]}" if detail else head


class Command(BaseCommand):
    help = "Start a project, follow its agents and tasks, print how it ended."

    def add_arguments(self, parser):
        parser.add_argument("request")
        parser.add_argument(
            "--dir",
            dest="directory",
            default="",
            help="working directory inside ARTOO_ALLOWED_PATHS (default: a new one)",
        )
        parser.add_argument(
            "--verify",
            action="append",
            default=[],
            metavar="COMMAND",
            help="a command every milestone's done needs to pass (repeatable)",
        )
        parser.add_argument(
            "--protect",
            action="append",
            default=[],
            metavar="PATH",
            help="a file or directory no task may change once committed",
        )
        parser.add_argument("--user", help="owner (default: the first superuser)")
        parser.add_argument("--timeout", type=float, default=7200.0)
        parser.add_argument(
            "--no-wait", action="store_true", help="print the project's id and return"
        )

    def handle(self, *args, request, directory, user, timeout, no_wait, **options):
        owner = RunCommand().owner(user)
        verify, protect = options["verify"], options["protect"]
        try:
            project = projects.create(owner, request, directory, verify, protect)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"project {project.id}")
        self.stdout.write(f"directory {project.directory}")
        if no_wait:
            return
        self.follow(project, timeout)
        project.refresh_from_db()
        self.stdout.write(f"\n{project.status}: {project.reason}")
        for agent, row in sorted(project.usage.items()):
            self.stdout.write(f"{agent:<14}{row['calls']:>6}{row['tokens']:>10}")
        sys.exit(0 if project.status == "complete" else 1)

    def follow(self, project: Project, timeout: float) -> None:
        last, deadline = 0, time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in project.messages.filter(id__gt=last).order_by("id"):
                last = msg.id
                self.stdout.write(describe(msg))
            project.refresh_from_db()
            if project.is_terminal and not project.messages.filter(id__gt=last):
                return
            time.sleep(POLL_S)
        raise CommandError(f"The project did not end within {timeout:.0f} s.")
