"""The Celery application; configuration comes from Django settings (CELERY_*).

A task closes its thread's database connections as a Django request does, when
they are older than CONN_MAX_AGE or broken (``close_old_connections``), so a
worker thread keeps one connection across the hops it runs.

Two things keep workers useful across a broker outage: ``RedisTransport`` lets a
worker close the connection of a Redis that died under it (kombu's own close
raises there and the worker exits), and ``SweepAfterReconnect`` sweeps the bus
outbox as soon as a worker is connected again, since a Redis that crashed lost
every delivery it held.
"""

import logging
import os
from queue import Empty

from celery import Celery, bootsteps, signals
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "artoo_web.settings")

log = logging.getLogger(__name__)

SWEEP_OUTBOX = "artoo_web.tasks.sweep_outbox"
# Longer than a running handler needs to take its lease again once Redis is
# back (bus.Lease sets it every second), so the sweep does not hand it out.
OUTAGE_SWEEP_DELAY_S = 2


class RedisChannel(kombu_redis.Channel):
    """kombu's Redis channel, closable after the server died mid-poll."""

    def close(self) -> None:
        # kombu reads the pending BRPOP's reply first; on a dead server that
        # raises, the channel stays open, and the worker's second close finds
        # the transport gone (AttributeError: 'NoneType' … 'hostname') and
        # exits. The reply is lost with the server: close without it.
        if self._in_poll:
            try:
                self._brpop_read()
            except Empty:
                pass
            except self.connection_errors:
                log.info("broker: closing a channel whose server went away")
        super().close()


class RedisTransport(kombu_redis.Transport):
    """The Redis transport with ``RedisChannel`` (``CELERY_BROKER_TRANSPORT``)."""

    Channel = RedisChannel


class SweepAfterReconnect(bootsteps.StartStopStep):
    """Enqueue an outbox sweep each time the worker reconnects to the broker."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.connections = 0

    def start(self, parent) -> None:
        self.connections += 1
        if self.connections == 1:
            return
        log.info("broker: connected again; sweeping the outbox")
        try:
            parent.app.send_task(
                SWEEP_OUTBOX,
                kwargs={"after_outage": True},
                queue="pipeline",
                countdown=OUTAGE_SWEEP_DELAY_S,
                ignore_result=True,
            )
        except Exception:
            # The periodic sweep still runs; a failed nudge only delays it.
            log.warning("broker: the sweep after reconnecting was not enqueued")


@signals.task_prerun.connect
@signals.task_postrun.connect
def close_old_connections(sender=None, **_kwargs) -> None:
    """Close the thread's database connections that are too old or broken.

    Django does this around each request; a task is a worker's request. An
    eager task runs inside its caller, whose connection is not ours to close.
    """
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections as close_old

    close_old()


app = Celery("artoo_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.steps["consumer"].add(SweepAfterReconnect)
app.autodiscover_tasks(["artoo_web"])
