"""Run a private artoo cluster of real processes: for benchmarks and fault tests.

    with Cluster(tmp_path) as cluster:          # migrates, starts every process
        cluster.kill("pipeline")                 # SIGKILL one, as a crash would
        cluster.start_process("pipeline")
        cluster.start_process("pipeline#2", node="pipeline2@%h")  # a second one

Each cluster has its own data dir (SQLite, or a ``DATABASE_URL`` given in env), its
own Redis (``REDIS_URL`` when given and answering, else an embedded
redis-server) and its own port; logs go to ``<data dir>/logs/<name>.log``.
A process name may carry a ``#suffix`` (``pipeline#2``) to run a second copy of
the same command; every Celery worker gets a node name of its own.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from devtools import launcher

ROOT = launcher.ROOT
READY_TIMEOUT_S = 60
STOP_GRACE_S = 15
WORKERS = ("pipeline", "memory")
# Inherited from a parent (a test session) these would point every cluster at
# the parent's settings, database, LevelDB and workspace instead of its own; a
# caller that wants a shared database passes DATABASE_URL in ``env``.
PARENT_ONLY = (
    "DJANGO_SETTINGS_MODULE",
    "DATABASE_URL",
    "ARTOO_MEMORY_PATH",
    "ARTOO_WORKSPACE",
)


def commands(
    port: int, concurrency: int, app: str = "artoo_web"
) -> dict[str, list[str]]:
    py, bin_dir = sys.executable, Path(sys.executable).parent
    celery = [str(bin_dir / "celery"), "-A", app, "worker", "--pool", "threads"]
    return {
        "web": [
            str(bin_dir / "daphne"),
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "artoo_web.asgi:application",
        ],
        "pipeline": [*celery, "-Q", "pipeline", "-c", str(concurrency), "-l", "info"],
        "memory": [*celery, "-Q", "memory", "-c", "4", "-l", "info"],
        "beat": [str(bin_dir / "celery"), "-A", "artoo_web", "beat", "-l", "info"],
        "auditor": [py, "manage.py", "audit"],
    }


def kind_of(name: str) -> str:
    """Return the command a process name runs: ``pipeline#2`` runs ``pipeline``."""
    return name.split("#")[0]


def default_node(name: str) -> str:
    """Return a unique Celery node name for a worker: ``pipeline#2`` → pipeline2@%h."""
    return name.replace("#", "") + "@%h"


class Cluster:
    """A set of artoo processes sharing one data dir, Redis and database."""

    def __init__(
        self,
        data_dir: Path,
        *,
        processes: tuple[str, ...] = ("web", "pipeline", "memory", "auditor"),
        env: dict[str, str] | None = None,
        concurrency: int = 12,
        ready_timeout: float = READY_TIMEOUT_S,
        app: str = "artoo_web",
    ):
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        self.names = processes
        # A machine busy with a CPU model starts the processes slowly.
        self.ready_timeout = ready_timeout
        self.port = launcher.free_port()
        self.env = launcher.base_env(self.data_dir)
        for name in PARENT_ONLY:
            self.env.pop(name, None)
        self.env["DJANGO_SETTINGS_MODULE"] = "artoo_web.settings"
        self.env.update(env or {})
        self.env.setdefault("SECRET_KEY", "artoo-cluster-" + self.data_dir.name)
        self.env["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
        self.env["CSRF_TRUSTED_ORIGINS"] = f"http://127.0.0.1:{self.port}"
        self.env["ARTOO_DREAM_EVERY_S"] = self.env.get("ARTOO_DREAM_EVERY_S", "300")
        # The workers' Celery app: ``devtools.hopprobe`` counts each task's work.
        self.commands = commands(self.port, concurrency, app)
        self.procs: dict[str, subprocess.Popen] = {}
        self._terminate: object = None
        self.redis_proc = None
        self._logs: dict[str, IO[bytes]] = {}
        self._log_start: dict[str, int] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        """Return the SQLite file (meaningful when ``DATABASE_URL`` is unset)."""
        return self.data_dir / "db.sqlite3"

    def __enter__(self) -> Cluster:
        self._terminate = _interrupt_on_sigterm()
        try:
            self.start()
        except BaseException:
            # A process that failed to come up must not leave the others running.
            self.stop()
            _restore(self._terminate)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            _restore(self._terminate)

    def start(self) -> None:
        self.redis_proc = launcher.ensure_redis(
            self.env, self.data_dir, for_tests=False
        )
        self.manage(
            "migrate", "--no-input", "-v", "0", timeout=max(120, self.ready_timeout)
        )
        for name in self.names:
            self.start_process(name)
        self.wait_ready(self.ready_timeout)

    def manage(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        """Run a management command against this cluster; return its result."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def start_process(self, name: str, *, node: str = "") -> subprocess.Popen:
        """Start one process (``pipeline``, ``pipeline#2``, ``web``…); no wait.

        Celery workers get ``node`` as their node name, else one derived from
        ``name``, so several workers of one kind never share a name.
        """
        if name in self.procs and self.procs[name].poll() is None:
            raise RuntimeError(f"{name} is already running")
        kind = kind_of(name)
        cmd = list(self.commands[kind])
        if kind in WORKERS:
            cmd += ["-n", node or default_node(name)]
        if kind == "beat":
            cmd += ["-s", str(self.data_dir / "celerybeat-schedule")]
        path = self.log_path(name)
        self._close_log(name)
        log = open(path, "ab")  # noqa: SIM115 (closed in stop)
        self._logs[name] = log
        self._log_start[name] = log.tell()
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def wait_ready(
        self, timeout: float = READY_TIMEOUT_S, names: tuple[str, ...] | None = None
    ) -> None:
        """Wait until the web port answers and every worker says it is ready."""
        deadline = time.monotonic() + timeout
        for name in names or tuple(self.procs):
            while not self.is_ready(name):
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"{name} exited; see {self.log_path(name)}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name} not ready; see {self.log_path(name)}")
                time.sleep(0.1)

    def is_ready(self, name: str) -> bool:
        kind = kind_of(name)
        if kind == "web":
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", self.port)) == 0
        if kind in WORKERS:
            return " ready." in self.log_text(name)
        return True

    def log_path(self, name: str) -> Path:
        return self.data_dir / "logs" / f"{name}.log"

    def log_text(self, name: str, *, whole: bool = False) -> str:
        """Return what the process's current instance logged (or the whole file)."""
        with open(self.log_path(name), "rb") as fh:
            if not whole:
                fh.seek(self._log_start.get(name, 0))
            return fh.read().decode(errors="replace")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to a process's whole group (SIGKILL: as a crash would)."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL after 15 s) and Redis."""
        procs = list(self.procs.values())
        self.procs.clear()
        for proc in procs:
            if proc.poll() is None:
                _killpg(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _killpg(proc, signal.SIGKILL)
                proc.wait(timeout=10)
        for name in list(self._logs):
            self._close_log(name)
        launcher.stop(self.redis_proc)
        self.redis_proc = None

    def _close_log(self, name: str) -> None:
        log = self._logs.pop(name, None)
        if log is not None:
            log.close()


def _interrupt_on_sigterm() -> object:
    """Make SIGTERM a KeyboardInterrupt in the main thread while a cluster runs.

    The processes run in sessions of their own, so a SIGTERM to the program
    that owns the cluster (``kill``, ``timeout``, CI cancelling a job) reaches
    none of them, and by default it ends that program without its ``finally``
    blocks or pytest's fixture teardown: workers, web, Redis and llama-server
    would go on running. As a KeyboardInterrupt it unwinds through them.
    Returns the handler to restore, or None when nothing was changed (another
    thread, or a handler of the program's own).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None
    signal.signal(signal.SIGTERM, _raise_interrupt)
    return signal.SIG_DFL


def _raise_interrupt(signum, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _restore(previous: object) -> None:
    """Put back the handler ``_interrupt_on_sigterm`` replaced, unless the
    program has installed one of its own since (the control bench's)."""
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _raise_interrupt:
        signal.signal(signal.SIGTERM, previous)


def _killpg(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
