"""Run a private artoo cluster of real processes: for benchmarks and fault tests.

    with Cluster(tmp_path) as cluster:          # migrates, starts every process
        cluster.kill("pipeline")                 # SIGKILL one, as a crash would
        cluster.start_process("pipeline")

Each cluster has its own data dir (SQLite by default, or ``DATABASE_URL``), its
own Redis (``REDIS_URL`` when given, else an embedded redis-server) and its own
port; logs go to ``<data dir>/logs/<name>.log``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from artoo_web import launcher

ROOT = launcher.ROOT
READY_TIMEOUT_S = 60


def commands(port: int, concurrency: int) -> dict[str, list[str]]:
    py, bin_dir = sys.executable, Path(sys.executable).parent
    celery = [str(bin_dir / "celery"), "-A", "artoo_web", "worker", "--pool", "threads"]
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


class Cluster:
    """A set of artoo processes sharing one data dir, Redis and database."""

    def __init__(
        self,
        data_dir: Path,
        *,
        processes: tuple[str, ...] = ("web", "pipeline", "memory", "auditor"),
        env: dict[str, str] | None = None,
        concurrency: int = 8,
    ):
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        self.names = processes
        self.port = launcher.free_port()
        self.env = launcher.base_env(self.data_dir)
        self.env.update(env or {})
        self.env.setdefault("SECRET_KEY", "artoo-cluster-" + self.data_dir.name)
        self.env["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
        self.env["CSRF_TRUSTED_ORIGINS"] = f"http://127.0.0.1:{self.port}"
        self.env["ARTOO_DREAM_EVERY_S"] = self.env.get("ARTOO_DREAM_EVERY_S", "300")
        self.commands = commands(self.port, concurrency)
        self.procs: dict[str, subprocess.Popen] = {}
        self.redis_proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.redis_proc = launcher.ensure_redis(
            self.env, self.data_dir, for_tests=False
        )
        self.manage("migrate", "--no-input", "-v", "0")
        for name in self.names:
            self.start_process(name)
        self.wait_ready()

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a management command against this cluster; return its result."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def start_process(self, name: str, *, node: str = "") -> subprocess.Popen:
        cmd = list(self.commands[name.split("#")[0]])
        if node:
            cmd += ["-n", node]
        if name.startswith("beat"):
            cmd += ["-s", str(self.data_dir / "celerybeat-schedule")]
        log = open(self.data_dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115
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

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until the web port answers and every worker says it is ready."""
        deadline = time.monotonic() + timeout
        for name in self.procs:
            while not self.is_ready(name):
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"{name} exited; see {self.log_path(name)}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name} not ready; see {self.log_path(name)}")
                time.sleep(0.1)

    def is_ready(self, name: str) -> bool:
        if name.startswith("web"):
            import socket

            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", self.port)) == 0
        text = self.log_path(name).read_text(errors="replace")
        if name.startswith(("pipeline", "memory")):
            return " ready." in text
        return True

    def log_path(self, name: str) -> Path:
        return self.data_dir / "logs" / f"{name}.log"

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
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        launcher.stop(self.redis_proc)
