"""A run's row changed: tell the run lists that show it, after commit.

The notice ``{"run": "<id>"}`` goes to the owner's channel
(``topics.runs_of``) and to ``topics.RUNS_ALL`` (staff see every run). It
carries no data: the list's consumer reads the row from the table and renders
the same partial as the page, so a notice lost or repeated changes nothing but
timing.
"""

from __future__ import annotations

import json
import logging

from django.db import transaction

from artoo_web import redisconn, topics

log = logging.getLogger(__name__)


def changed(run_id, owner_id) -> None:
    """Announce, once the caller's transaction commits, that a run changed."""
    transaction.on_commit(lambda: publish(run_id, owner_id))


def publish(run_id, owner_id) -> None:
    data = json.dumps({"run": str(run_id)})
    try:
        with redisconn.client().pipeline(transaction=False) as pipe:
            pipe.publish(topics.runs_of(owner_id), data)
            pipe.publish(topics.RUNS_ALL, data)
            pipe.execute()
    except Exception:
        # The table is the record: the list catches up when it reconnects.
        log.warning("runfeed: notice for run %s failed", run_id, exc_info=True)
