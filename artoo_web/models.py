"""The records of artoo_web: projects, runs, the bus, and the per-run decision log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from artoo_web import runfeed
from roles.ggs import control
from roles.projects import ProjectState
from roles.runstate import RunState


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    PERCEIVING = "perceiving"
    NEEDS_INPUT = "needs_input"
    PLANNING = "planning"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    VALIDATING = "validating"
    REPLANNING = "replanning"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})


CONTROL_CHOICES = [(name, name) for name in control.NAMES]


def default_control() -> str:
    """Return the strategy of a run submitted without one (``ARTOO_CONTROL``)."""
    return settings.ARTOO_CONTROL


class ProjectStatus(models.TextChoices):
    """A project's phase (``roles.projects.state.Phase``): who it waits on."""

    SCOPE = "scope", "Scoping"
    PLAN = "plan", "Planning"
    IMPLEMENT = "implement", "Implementing"
    QA = "qa", "Checking"
    ASSESS = "assess", "Assessing"
    VERIFY = "verify", "Verifying"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"


PROJECT_TERMINAL = frozenset(
    {ProjectStatus.COMPLETE, ProjectStatus.FAILED, ProjectStatus.CANCELLED}
)


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user) -> ProjectQuerySet:
        """Return the projects ``user`` may see: their own, or all for staff."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(owner=user)


class Project(models.Model):
    """Long-horizon work on a directory: a request, milestones, a Run per task.

    ``state`` is the stored ``roles.projects.ProjectState``; ``status`` mirrors
    its phase for lists and filters. ``usage`` holds calls, tokens and cost per
    project agent; ``failures`` counts a handler's errors per bus message.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects"
    )
    request = models.TextField()
    directory = models.CharField(max_length=1000)
    status = models.CharField(
        max_length=12, choices=ProjectStatus.choices, default=ProjectStatus.SCOPE
    )
    state = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    failures = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    # The commit a failed or stopped attempt is reset to: the project's start,
    # then each task QA passed.
    last_commit = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return f"project {self.id}"

    @property
    def is_terminal(self) -> bool:
        return self.status in PROJECT_TERMINAL

    def load_state(self) -> ProjectState:
        """Return the project's typed state."""
        return ProjectState.from_dict(self.state)

    def keep_state(self, state: ProjectState) -> None:
        """Store a typed state and its phase on the row (the caller saves)."""
        self.state = state.to_dict()
        self.status = state.phase


class TaskCommitKind(models.TextChoices):
    DONE = "done"
    DISCARDED = "discarded"


class TaskCommit(models.Model):
    """A task attempt's work as a commit: a done task's on the project's branch,
    a discarded attempt's under ``refs/artoo/discarded/<dispatch id>``.

    A discarded attempt also keeps its diff (``git show``, bounded) and the
    files it created here, so they stay readable when the repository does not.
    """

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="task_commits"
    )
    dispatch_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=10, choices=TaskCommitKind.choices)
    commit = models.CharField(max_length=40)
    reason = models.TextField(blank=True)
    diff = models.TextField(blank=True)
    new_files = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "dispatch_id"], name="task_commit_per_attempt"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dispatch_id} {self.kind} {self.commit[:12]}"


class RunQuerySet(models.QuerySet):
    def visible_to(self, user) -> RunQuerySet:
        """Return the runs ``user`` may see: their own, or all for staff."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(owner=user)


class Run(models.Model):
    """One user request, from submission to its FinalResult."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    raw_input = models.TextField()
    status = models.CharField(
        max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED
    )
    task_id = models.SlugField(max_length=120, blank=True)
    round = models.PositiveIntegerField(default=0)
    ggs_state = models.JSONField(default=dict, blank=True)
    state = models.JSONField(default=dict, blank=True)
    final_result = models.JSONField(null=True, blank=True)
    directive = models.CharField(max_length=20, blank=True)
    # How the loop is steered after each round (roles/ggs/control.py).
    control = models.CharField(
        max_length=10, choices=CONTROL_CHOICES, default=default_control
    )
    # A project's task runs under its dispatch id (``t3-a1``), at most once.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="runs", null=True, blank=True
    )
    dispatch_id = models.CharField(max_length=40, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    human_wait_ms = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "dispatch_id"],
                condition=models.Q(project__isnull=False),
                name="one_run_per_dispatch",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id or 'run'} {self.id}"

    def save(self, *args, **kwargs) -> None:
        super().save(*args, **kwargs)
        # The run lists showing this row re-render it once this commits.
        runfeed.changed(self.id, self.owner_id)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def expects_next_moves(self) -> bool:
        """Return True when R2 writes NextMoves for this ended run.

        Only an abandon that failed the run gets them (GGS's at once; the
        watchdog's and a handler's give-up through the sweeper): a success,
        R1's direct answer and a cancel get none.
        """
        return self.status == RunStatus.FAILED and self.directive == "abandon"

    def load_state(self) -> RunState:
        """Return the run's typed state (``roles.runstate.RunState``)."""
        return RunState.model_validate(self.state or {})

    def keep_state(self, state: RunState) -> None:
        """Store a typed state on the row (the caller saves)."""
        self.state = state.model_dump(mode="json", by_alias=True, exclude_defaults=True)


class BusMessage(models.Model):
    """One inter-role message; the id is the bus's global order."""

    id = models.BigAutoField(primary_key=True)
    # Null for messages about no single run (an operator's audit query).
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="messages", null=True, blank=True
    )
    # Set on a project's messages; a task's RunReply has both.
    project = models.ForeignKey(
        Project,
        on_delete=models.CASCADE,
        related_name="messages",
        null=True,
        blank=True,
    )
    round = models.PositiveIntegerField(default=0)
    sender = models.CharField(max_length=8)
    recipient = models.CharField(max_length=8)
    type = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "id"]),
            models.Index(
                fields=["created_at"],
                name="bus_undelivered",
                condition=models.Q(delivered_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.id} {self.sender}→{self.recipient} {self.type}"

    def envelope(self) -> dict:
        """Return the JSON envelope published on the bus channels."""
        return {
            "id": self.id,
            "run": str(self.run_id) if self.run_id else None,
            "project": str(self.project_id) if self.project_id else None,
            "round": self.round,
            "sender": self.sender,
            "recipient": self.recipient,
            "type": self.type,
            "payload": self.payload,
            "created_at": self.created_at.isoformat(),
            "delivered_at": (
                self.delivered_at.isoformat() if self.delivered_at else None
            ),
        }


class TraceEvent(models.Model):
    """Intra-role detail: an LLM call, a tool call, a verdict, a memory query."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="trace")
    role = models.CharField(max_length=8)
    kind = models.CharField(max_length=40)
    data = models.JSONField(default=dict)
    tokens = models.PositiveIntegerField(default=0)
    elapsed_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"])]

    def __str__(self) -> str:
        return f"{self.role} {self.kind}"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    # Its round closed before a decision: nothing of it runs.
    VOIDED = "voided"


class ApprovalGate(models.TextChoices):
    # What put the call to the operator (roles.tools.law1.ApprovalAsk.gate).
    LAW1 = "law1", "Law 1"
    MEMORY = "memory", "memory caution"


class Approval(models.Model):
    """A gated tool call waiting for the operator's decision: Law 1 (a
    destructive call) or memory's Caution on its (tool, target).

    Its subtask is parked meanwhile: ``parked`` holds what the executor needs to
    carry on (``artoo_web.handlers.executor``), ``resumed_at`` when it did.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    round = models.PositiveIntegerField(default=0)
    subtask_id = models.CharField(max_length=64)
    # An MCP tool is named up to 64 characters (roles.tools.mcp).
    tool = models.CharField(max_length=64)
    command = models.TextField()
    reason = models.TextField()
    gate = models.CharField(
        max_length=8, choices=ApprovalGate.choices, default=ApprovalGate.LAW1
    )
    # Law 1 by effect: what the sandboxed command changed, as Change.as_dict().
    changes = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    parked = models.JSONField(default=dict, blank=True)
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.tool}: {self.command[:60]} ({self.status})"


class ApiToken(models.Model):
    """A per-user API token; only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80, blank=True)
    prefix = models.CharField(max_length=8)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} {self.prefix}… {'revoked' if self.revoked_at else ''}"


class Benchmark(models.Model):
    """One session of a benchmark (``bench/control.py``): its record and table.

    ``record`` is the bench's JSON (settings, scenarios, per-run results with
    their run ids, per-strategy summaries, the chart's rows); ``report`` is the
    Markdown it printed.
    """

    name = models.CharField(max_length=40)
    session = models.CharField(max_length=80)
    model = models.CharField(max_length=300, blank=True)
    record = models.JSONField()
    report = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} {self.session}"


from artoo_web.auditlog import (  # noqa: E402,F401
    AuditCursor,
    AuditEventRecord,
    AuditReportRecord,
    ChainCheck,
)
