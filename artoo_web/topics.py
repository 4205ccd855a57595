"""The one place that names Redis channels and websocket paths."""

from __future__ import annotations

from uuid import UUID

BUS_ALL = "artoo.bus.all"
BUS_PATTERN = "artoo.bus.*"
AUDIT = "artoo.audit"
# The operator's memories (a JSON list of texts) the memory worker leaves for R1.
GLOBAL_MEMORIES = "artoo.memory.global"
# Every run's row changes (staff's run list); a user's own are on ``runs_of``.
RUNS_ALL = "artoo.runs.all"
# The run list's live rows.
WS_RUN_LIST = "/ws/run-list/"
# The fair share of subtask slots: message id → user of each subtask executing,
# and → {"user", "since"} of each waiting for a slot (artoo_web/fairshare.py).
FAIR_RUNNING = "artoo.fair.running"
FAIR_WAITING = "artoo.fair.waiting"


def bus_run(run_id: UUID | str) -> str:
    """Return the pub/sub channel carrying one run's messages."""
    return f"artoo.bus.run.{run_id}"


def bus_project(project_id: UUID | str) -> str:
    """Return the pub/sub channel carrying one project's messages."""
    return f"artoo.bus.project.{project_id}"


def ws_project_path(project_id: UUID | str) -> str:
    """Return the websocket path of one project's live page."""
    return f"/ws/projects/{project_id}/"


def runs_of(owner_id: int | str) -> str:
    """Return the pub/sub channel announcing changes to one user's runs."""
    return f"artoo.runs.owner.{owner_id}"


def ws_run_path(run_id: UUID | str) -> str:
    """Return the websocket path of one run's live stream."""
    return f"/ws/runs/{run_id}/"


def cancel_key(run_id: UUID | str) -> str:
    """Return the Redis key whose presence tells workers a run was cancelled."""
    return f"artoo.cancel.{run_id}"


def lease_key(message_id: int) -> str:
    """Return the Redis key a worker holds while it delivers one message."""
    return f"artoo.lease.{message_id}"


def perception_lease_key(run_id: UUID | str) -> str:
    """Return the Redis key a worker holds while R1 perceives one run."""
    return f"artoo.lease.perceive.{run_id}"
