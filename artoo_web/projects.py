"""A project's life from the outside, and the shell around its state machine.

Views, the API and the CLI call ``create`` and ``cancel``; the project handlers
call ``carry_out`` with the actions ``roles.projects.step`` returned (after the
new state is stored), ``record_usage`` after an agent's model call and
``give_up`` when a handler keeps failing; ``runs.finish`` calls ``run_ended``
when a task's Run ends, which sends its RunReply. Every decision is
``roles.projects``'s; this module only persists, sends, starts Runs and has
``projectrepo`` commit a done task's work or discard a failed attempt's.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from artoo_web import bus, projectrepo
from artoo_web.models import (
    BusMessage,
    Project,
    Run,
    RunStatus,
    TaskCommit,
    TaskCommitKind,
)
from roles.projects import new_project
from roles.projects.contracts import ImplementationResult, clip
from roles.projects.events import (
    EVENT,
    Action,
    FinishProject,
    RecordDone,
    ResetTask,
)
from roles.projects.stopping import stop

log = logging.getLogger(__name__)

# Where each action goes: (message type, recipient); the sender is the Project.
ROUTE_OF = {
    "ask_scope_agent": ("AskScopeAgent", "Scope"),
    "ask_task_planner": ("AskTaskPlanner", "TaskPlan"),
    "dispatch_task": ("DispatchTask", "Impl"),
    "stop_task": ("StopTask", "Impl"),
    "reset_task": ("ResetTask", "User"),
    "ask_qa": ("AskQA", "QA"),
    "ask_assessor": ("AskAssessor", "Assessor"),
    "verify_milestone": ("VerifyMilestone", "QA"),
    "record_verification": ("RecordVerification", "User"),
    "record_done": ("RecordDone", "User"),
    "record_escalation": ("RecordEscalation", "User"),
    "finish_project": ("FinishProject", "User"),
}
# The event kind each reply message carries to ``step``.
EVENT_KIND = {
    "ScopeReply": "scope",
    "PlanReply": "plan",
    "RunReply": "run",
    "QAReply": "qa",
    "AssessorReply": "assessor",
    "VerifyReply": "verify",
    "Cancel": "cancel",
}
MAX_REQUEST_CHARS = 20_000


class Conflict(Exception):
    """The project is not in a state that allows this operation."""


class ConfigError(ValueError):
    """A bad verification command or protected path, said as one sentence.

    ``field`` is ``verify`` or ``protected``, ``index`` the position of the bad
    item (None when the list itself is bad: too many) and ``reason`` the
    problem without them, for a form to say where it is in its own words.
    """

    def __init__(self, error: ValidationError):
        first = error.errors()[0]
        loc = first["loc"]
        self.field = str(loc[0])
        self.index = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        if first["type"] == "too_long":
            limit = first["ctx"]["max_length"]
            given = first["ctx"]["actual_length"]
            items = "commands" if self.field == "verify" else "paths"
            self.reason = f"at most {limit} {items}, not {given}"
        else:
            self.reason = first["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in loc)
        super().__init__(f"Bad project config: {where}: {self.reason}.")


def clean_request(text: str) -> str:
    """Return the request stripped, or raise ValueError saying what is wrong."""
    text = (text or "").strip()
    if not text:
        raise ValueError("Enter a request: it is empty.")
    limit = min(settings.ARTOO_MAX_INPUT_CHARS, MAX_REQUEST_CHARS)
    if len(text) > limit:
        raise ValueError(
            f"The request is {len(text):,} characters; the limit is {limit:,}."
        )
    if "\x00" in text:
        raise ValueError("The request contains a NUL character.")
    return text


def create(
    owner, request: str, directory: str = "", verify=(), protected=()
) -> Project:
    """Create a project and ask its ScopeAgent; raise ValueError for bad input.

    ``directory`` is an allowed path (made a git repository when it is not
    one) or empty for a new directory in the owner's workspace area.
    ``verify`` and ``protected`` are the project's own verification commands
    and protected paths (``roles.projects.verification``); a bad one is
    refused before anything is made.
    """
    request = clean_request(request)
    try:
        state, actions = new_project(request, verify, protected)
    except ValidationError as error:
        raise ConfigError(error) from None
    if directory.strip():
        path = projectrepo.allowed_directory(directory.strip())
    else:
        path = projectrepo.created_directory(owner.pk)
    projectrepo.prepare(path)
    start = projectrepo.head(path)
    with transaction.atomic():
        project = Project(
            owner=owner, request=request, directory=str(path), last_commit=start
        )
        project.keep_state(state)
        project.save()
        carry_out(project, actions)
    return project


def cancel(project: Project) -> BusMessage:
    """Ask the project to stop (its running task too); raise Conflict if it ended."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(id=project.id)
        if project.is_terminal:
            raise Conflict(f"The project is already {project.status}.")
        return send(project, "User", "Project", "Cancel", {})


def send(project: Project, sender: str, recipient: str, type_: str, payload, run=None):
    """Send one of the project's messages on the bus."""
    return bus.send(run, sender, recipient, type_, payload, project=project)


def event_of(msg: BusMessage):
    """Return the ``step`` event a reply message carries."""
    return EVENT.validate_python({**msg.payload, "kind": EVENT_KIND[msg.type]})


def carry_out(project: Project, actions: list[Action]) -> None:
    """Send each action on its route, in order; record the project's end."""
    for action in actions:
        if isinstance(action, RecordDone):
            commit_task(project, action)
        if isinstance(action, ResetTask):
            discard_task(project, action)
        if isinstance(action, FinishProject):
            project.reason = action.reason
            project.finished_at = timezone.now()
            project.save(update_fields=["reason", "finished_at", "updated_at"])
        type_, recipient = ROUTE_OF[action.kind]
        send(project, "Project", recipient, type_, action)


def commit_task(project: Project, done: RecordDone) -> None:
    """Commit a done task's work, so the next task's changes stand apart."""
    entry = done.entry
    try:
        sha = projectrepo.commit(
            Path(project.directory), f"{entry.task_id}: {entry.description}"
        )
    except (projectrepo.DirectoryError, OSError) as error:
        log.warning(
            "project %s: commit of %s failed: %s", project.id, entry.task_id, error
        )
        return
    if not sha:
        return
    project.last_commit = sha
    project.save(update_fields=["last_commit", "updated_at"])
    TaskCommit.objects.update_or_create(
        project=project,
        dispatch_id=done.dispatch_id or entry.task_id,
        defaults={"task_id": entry.task_id, "kind": TaskCommitKind.DONE, "commit": sha},
    )


def discard_task(project: Project, reset: ResetTask) -> None:
    """Keep a failed or stopped attempt's work aside, then reset the directory
    to the last commit, so the next attempt starts clean."""
    message = f"{reset.request_id} (discarded): {reset.reason}"
    try:
        kept = projectrepo.discard(
            Path(project.directory), reset.request_id, message, project.last_commit
        )
    except (projectrepo.DirectoryError, OSError) as error:
        log.warning(
            "project %s: reset after %s failed: %s", project.id, reset.request_id, error
        )
        return
    if kept is None:
        return
    TaskCommit.objects.update_or_create(
        project=project,
        dispatch_id=reset.request_id,
        defaults={
            "task_id": reset.task_id,
            "kind": TaskCommitKind.DISCARDED,
            "commit": kept.commit,
            "reason": reset.reason,
            "diff": kept.diff,
            "new_files": kept.new_files,
        },
    )


def task_run(project: Project, dispatch_id: str) -> Run | None:
    """Return the Run started for a dispatch id, if any."""
    return Run.objects.filter(project=project, dispatch_id=dispatch_id).first()


def run_ended(run: Run) -> None:
    """Send a project task's RunReply: what it changed and how it ended."""
    if run.project_id is None or not run.dispatch_id:
        return
    project = Project.objects.get(id=run.project_id)
    final = run.final_result or {}
    try:
        files = projectrepo.changed_files(Path(project.directory))
    except (projectrepo.DirectoryError, OSError) as error:
        files = []
        log.warning("project %s: changed files unknown: %s", project.id, error)
    result = ImplementationResult(
        files=files,
        result_summary=clip(str(final.get("summary") or ""), 300),
        success=run.status == RunStatus.DONE,
    )
    payload = {"request_id": run.dispatch_id, "result": result}
    send(project, "Impl", "Project", "RunReply", payload, run=run)


def record_usage(project_id, agent: str, usage) -> None:
    """Add one agent's model calls, tokens and cost to the project's usage."""
    if usage is None:
        return
    project = Project.objects.select_for_update().get(id=project_id)
    row = project.usage.get(agent, {"calls": 0, "tokens": 0, "cost_usd": 0.0})
    for call in usage.calls:
        row["calls"] += 1
        row["tokens"] += call.prompt_tokens + call.completion_tokens
        row["cost_usd"] = float(
            Decimal(str(row["cost_usd"])) + Decimal(str(call.cost_usd or 0))
        )
    project.usage[agent] = row
    project.save(update_fields=["usage", "updated_at"])


def give_up(msg: BusMessage, error: str, attempts: int) -> None:
    """End a project whose handler keeps failing: stop its task, fail it."""
    with transaction.atomic():
        BusMessage.objects.filter(id=msg.id).update(delivered_at=timezone.now())
        project = Project.objects.select_for_update().get(id=msg.project_id)
        if project.is_terminal:
            return
        reason = (
            f"{msg.recipient} could not handle {msg.type} "
            f"after {attempts} attempts ({error})"
        )
        state, actions = stop(project.load_state(), "failed", reason)
        project.keep_state(state)
        project.save()
        carry_out(project, actions)
