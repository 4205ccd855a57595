"""The run stream's frames, rendered once per run and sent as they are to all.

A frame is the JSON text one websocket message carries. Frames of a message:

    {"kind": "message", "id": 7, "type": "NextMoves", "sender": "R2",
     "recipient": "User", "html": "<li id=\\"msg-7\\" …>", "swaps": {…}}

``swaps`` maps element id → dashboard fragment for the parts the frame's kind
affects (``RENDERS``); a run's relay renders them once per batch of messages
and hands the same text to every subscriber of the run. An anomaly is
``{"kind": "audit", "event": …, "swaps": …}``, and R6's answer to an audit
query ``{"kind": "swaps", "swaps": …}``. A project page's frame is
``{"kind": "swaps", "swaps": …}`` too, with every part of the page
(``project_frame``).

Everything here reads the database: callers run it off the event loop, in the
render thread (``in_render_thread``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from asgiref.sync import SyncToAsync
from django.db import close_old_connections, connection
from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime

from artoo_web import dashboard, projectviews
from artoo_web.auditlog import AuditReportRecord
from artoo_web.models import BusMessage, Run

# Frame kind → the dashboard parts it carries, given the message type.
RENDERS: dict[str, Callable[[str], tuple[str, ...]]] = {
    "message": dashboard.parts_for,
    "audit": lambda _type: ("audit-panel",),
    "swaps": lambda _type: ("audit-panel",),
    # The last frame of a catch-up makes a reconnecting page whole again.
    "caught-up": lambda _type: tuple(dashboard.PARTS),
}
# An AuditQuery younger than this is still awaited: its answer is pushed.
AUDIT_WAIT = timedelta(seconds=60)

# One thread renders for every relay of the process, apart from the thread that
# serves the consumers' own queries (sessions, permissions, catch-up pages).
_render_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="artoo-render")


def in_render_thread(fn):
    """Wrap a database-reading function to be awaited from the render thread."""
    return SyncToAsync(
        keeping_connection(fn), thread_sensitive=False, executor=_render_pool
    )


def close_render_connection() -> None:
    """Close the render thread's database connection (kept between renders)."""
    # ``connection`` is looked up in the render thread: it is that thread's own.
    _render_pool.submit(lambda: connection.close()).result()


def keeping_connection(fn):
    """Run ``fn`` on the thread's open connection, replaced only when it broke.

    The render thread keeps its SQLite connection for good (opening one costs
    as much as a fifth of a render; tests run with CONN_MAX_AGE 0); other
    databases keep theirs for their CONN_MAX_AGE, as Django's requests do.
    """

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if connection.vendor != "sqlite":
            close_old_connections()
        elif connection.errors_occurred and not connection.is_usable():
            connection.close()
        connection.errors_occurred = False
        return fn(*args, **kwargs)

    return call


def from_envelope(envelope: dict) -> BusMessage:
    """Return an unsaved BusMessage built from a published envelope."""
    return BusMessage(
        id=envelope["id"],
        run_id=envelope["run"],
        round=envelope["round"],
        sender=envelope["sender"],
        recipient=envelope["recipient"],
        type=envelope["type"],
        payload=envelope["payload"],
        created_at=parse_datetime(envelope["created_at"]),
        delivered_at=parse_datetime(envelope.get("delivered_at") or ""),
    )


def row_html(msg: BusMessage, now=None) -> str:
    dashboard.decorate(msg, now)
    return render_to_string("artoo_web/run_detail.html#bus-row", {"m": msg})


def message_frame(msg: BusMessage, swaps: dict | None = None, now=None) -> str:
    return json.dumps(
        {
            "kind": "message",
            "id": msg.id,
            "type": msg.type,
            "sender": msg.sender,
            "recipient": msg.recipient,
            "html": row_html(msg, now),
            "swaps": swaps or {},
        }
    )


def render_swaps(run_id, kinds: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Render once each part that any (frame kind, message type) affects."""
    parts = [part for kind, type_ in kinds for part in RENDERS[kind](type_)]
    return dashboard.render_parts(run_id, parts)


def live_frames(run_id, envelopes: list[dict]) -> list[tuple[int, str]]:
    """Return (id, frame) of each message; the last carries the batch's swaps.

    Swaps show the run as it is now, so the newest frame's are enough.
    """
    msgs = [from_envelope(e) for e in envelopes]
    swaps = render_swaps(run_id, [("message", m.type) for m in msgs])
    last = len(msgs) - 1
    return [
        (m.id, message_frame(m, swaps if i == last else None))
        for i, m in enumerate(msgs)
    ]


def audit_frame(run_id, event: dict) -> str:
    swaps = render_swaps(run_id, [("audit", "")])
    return json.dumps({"kind": "audit", "event": event, "swaps": swaps})


def report_frame(run_id) -> str:
    return json.dumps({"kind": "swaps", "swaps": render_swaps(run_id, [("swaps", "")])})


def answered_queries(query_ids: set[int]) -> set[int]:
    rows = AuditReportRecord.objects.filter(in_reply_to__in=query_ids)
    return set(rows.values_list("in_reply_to", flat=True))


def project_frame(project_id) -> str:
    """Return the frame of every live part of a project's page."""
    return json.dumps({"kind": "swaps", "swaps": projectviews.render_parts(project_id)})


def has_project_run(project_id, run_ids: Iterable[str]) -> bool:
    """Return True when any of the runs is one of the project's tasks."""
    return Run.objects.filter(project_id=project_id, id__in=list(run_ids)).exists()
