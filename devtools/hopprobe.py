"""Count what each Celery task costs in a worker: the per-hop profile of a run.

    celery -A devtools.hopprobe worker ...    # with ARTOO_HOPS_FILE=<path>

A worker started with this app instead of ``artoo_web`` runs the same tasks and
appends one JSON line per task to ``ARTOO_HOPS_FILE``, and one per task any
process with this module enqueues (``{"sent": <task id>, "at": <time>}``):

    {"task": "artoo_web.tasks.deliver", "id": "6f1…", "args": [42],
     "retval": "delivered", "started": 1764142800.12, "wall_ms": 3.1,
     "cpu_ms": 2.7, "queries": 9, "transactions": 2, "connects": 1,
     "redis_commands": 6, "redis_round_trips": 5,
     "enqueued": ["artoo_web.tasks.deliver"], "threads": 1}

Counting is per thread (the workers use the threads pool), so a task is charged
only with what its own thread did: its SQL statements (Django's
``execute_wrapper``), its commits and the writes it made outside a transaction
(each one a transaction of its own), the database connections it opened, its
Redis commands and round trips (a pipeline is one round trip), the Celery tasks
it enqueued (``before_task_publish``) and the threads it started. ``Probe`` counts
the same around any block of code in the calling process.

With ``ARTOO_HOPS_CPROFILE=<dir>`` each task also runs under cProfile (timed by
the thread's CPU clock), and each
worker process keeps the sum of its tasks' profiles in ``<dir>/<pid>.prof``.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import threading
import time
from dataclasses import asdict, dataclass, field

from celery import signals
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from redis import Redis
from redis.client import Pipeline

from artoo_web.celery import app

__all__ = ["Probe", "app"]

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_local = threading.local()
_write_lock = threading.Lock()


@dataclass
class Counts:
    wall_ms: float = 0.0
    cpu_ms: float = 0.0
    queries: int = 0
    transactions: int = 0
    connects: int = 0
    redis_commands: int = 0
    redis_round_trips: int = 0
    enqueued: list[str] = field(default_factory=list)
    threads: int = 0


def _active() -> Counts | None:
    return getattr(_local, "counts", None)


def _count_query(execute, sql, params, many, context):
    counts = _active()
    if counts is not None:
        counts.queries += 1
        conn = context["connection"]
        if not conn.in_atomic_block and sql.lstrip().upper().startswith(WRITES):
            counts.transactions += 1
    return execute(sql, params, many, context)


class Probe:
    """Count what the calling thread does between enter and exit."""

    def __enter__(self) -> Counts:
        self.counts = Counts()
        self.conn = connections["default"]
        self.conn.execute_wrappers.append(_count_query)
        _local.counts = self.counts
        self.wall, self.cpu = time.perf_counter(), time.thread_time()
        return self.counts

    def __exit__(self, *exc) -> None:
        self.counts.wall_ms = (time.perf_counter() - self.wall) * 1000
        self.counts.cpu_ms = (time.thread_time() - self.cpu) * 1000
        _local.counts = None
        if _count_query in self.conn.execute_wrappers:
            self.conn.execute_wrappers.remove(_count_query)


def _patch(cls, name: str, count) -> None:
    original = getattr(cls, name)

    def counted(self, *args, **kwargs):
        counts = _active()
        if counts is not None:
            count(counts, self)
        return original(self, *args, **kwargs)

    counted.__wrapped__ = original
    setattr(cls, name, counted)


def _one_command(counts: Counts, client) -> None:
    if not isinstance(client, Pipeline):
        counts.redis_commands += 1
        counts.redis_round_trips += 1


def _pipeline(counts: Counts, pipe: Pipeline) -> None:
    counts.redis_commands += len(pipe.command_stack)
    counts.redis_round_trips += 1


def _commit(counts: Counts, conn) -> None:
    counts.transactions += 1


def _connect(counts: Counts, conn) -> None:
    counts.connects += 1


def _thread(counts: Counts, thread) -> None:
    counts.threads += 1


def install() -> None:
    """Patch the counting seams once per process."""
    if getattr(install, "done", False):
        return
    install.done = True
    _patch(Redis, "execute_command", _one_command)
    _patch(Pipeline, "execute", _pipeline)
    _patch(BaseDatabaseWrapper, "commit", _commit)
    _patch(BaseDatabaseWrapper, "connect", _connect)
    _patch(threading.Thread, "start", _thread)


_probes: dict[str, tuple[Probe, float, cProfile.Profile | None]] = {}
_profiles: dict[str, pstats.Stats] = {}


@signals.before_task_publish.connect
def _on_publish(sender=None, headers=None, **kwargs) -> None:
    counts = _active()
    if counts is not None:
        counts.enqueued.append(sender)
    task_id = (headers or {}).get("id")
    if task_id:
        _write({"sent": task_id, "at": time.time()})


def _keep_profile(profile: cProfile.Profile) -> None:
    path = os.path.join(os.environ["ARTOO_HOPS_CPROFILE"], f"{os.getpid()}.prof")
    with _write_lock:
        if path in _profiles:
            _profiles[path].add(profile)
        else:
            _profiles[path] = pstats.Stats(profile)
        # Whole or not at all: the bench may read the file while a late hop
        # (after the FinalResult) is still being recorded.
        _profiles[path].dump_stats(f"{path}.tmp")
        os.replace(f"{path}.tmp", path)


def _write(record: dict) -> None:
    path = os.environ.get("ARTOO_HOPS_FILE")
    if path:
        with _write_lock, open(path, "a") as fh:
            fh.write(json.dumps(record) + "\n")


@signals.task_prerun.connect
def _on_prerun(task_id=None, **kwargs) -> None:
    probe = Probe()
    # Timed by the thread's CPU clock: on a busy machine wall time is mostly
    # waiting for a core.
    wanted = os.environ.get("ARTOO_HOPS_CPROFILE")
    profile = cProfile.Profile(time.thread_time) if wanted else None
    _probes[task_id] = (probe, time.time(), profile)
    probe.__enter__()
    if profile is not None:
        profile.enable()


@signals.task_postrun.connect
def _on_postrun(task_id=None, task=None, args=None, retval=None, **kwargs) -> None:
    entry = _probes.pop(task_id, None)
    if entry is None:
        return
    probe, started, profile = entry
    probe.__exit__(None, None, None)
    if profile is not None:
        profile.disable()
        _keep_profile(profile)
    record = {
        "task": task.name,
        "id": task_id,
        "args": list(args or []),
        "retval": retval if isinstance(retval, str | int | None) else repr(retval),
        "started": started,
        **asdict(probe.counts),
    }
    _write(record)


install()
