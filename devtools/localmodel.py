"""The local model as one more process: ``ARTOO_MODEL=local`` and ``make test-model``.

``LocalModel(data_dir).start()`` starts the ``llama-server`` that ``make model``
built, on a free local port with the verified weights, waits until it answers,
and returns the environment that points every tier at it::

    with LocalModel(data_dir) as local:
        env.update(local.env)

``ARTOO_MODEL_SIZE`` picks the weights (1.5b, 0.5b), ``ARTOO_LOCAL_CONTEXT`` the
context window of one request (default 8192 tokens), ``ARTOO_LOCAL_THREADS`` the
threads and ``ARTOO_LOCAL_SLOTS`` how many requests the server decodes at once
(default 1; each slot has a context window of its own).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devtools import model as installer

DEFAULT_CONTEXT = 8192
# A 2-core machine serves one request at a time; a call may wait behind others.
LLM_TIMEOUT_S = "900"
TIME_BUDGET_S = "1800"
# The clocks of a cluster that runs tasks on a CPU model, one at a time: a run
# may wait a long time on one call or on the operator (the real-model tier and
# bench/control.py start their clusters with these).
CLUSTER_ENV = {
    "REDIS_URL": "",  # an embedded redis-server of its own
    "ARTOO_APPROVAL_TIMEOUT_S": "600",
    "ARTOO_RUN_DEADLINE_S": "1800",
    "ARTOO_FANIN_DEADLINE_S": "1200",
    "ARTOO_MEMORY_TIMEOUT_S": "10",
    "ARTOO_LOG_LEVEL": "INFO",
}


class LocalModelMissing(RuntimeError):
    """The weights or the server are not installed (``make model``)."""


class LocalModel:
    """Start, describe and stop one local llama-server."""

    def __init__(self, data_dir: Path, size: str | None = None, slots: int = 0):
        self.data_dir = Path(data_dir)
        self.size = size or os.environ.get("ARTOO_MODEL_SIZE", "1.5b")
        self.context = int(os.environ.get("ARTOO_LOCAL_CONTEXT", DEFAULT_CONTEXT))
        self.slots = max(1, slots or int(os.environ.get("ARTOO_LOCAL_SLOTS", "1")))
        self.threads = int(os.environ.get("ARTOO_LOCAL_THREADS", os.cpu_count() or 2))
        self.cache = installer.cache_dir()
        self.weights = installer.WEIGHTS[self.size]
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log = self.data_dir / "llama-server.log"

    @property
    def model_file(self) -> Path:
        return self.cache / self.weights.filename

    def require_installed(self) -> None:
        """Raise LocalModelMissing with what to run when anything is missing."""
        server = installer.server_built(self.cache)
        weights = installer.weights_verified(self.weights, self.model_file, False)
        if not (server and weights):
            missing = [
                what
                for what, ok in (("llama-server", server), ("weights", weights))
                if not ok
            ]
            raise LocalModelMissing(
                f"the local model is not installed ({', '.join(missing)} missing "
                f"in {self.cache}): run `make model` first"
            )

    def command(self) -> list[str]:
        """Return the llama-server command line."""
        return [
            str(installer.server_path(self.cache)),
            "-m",
            str(self.model_file),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-a",
            "local",
            "-t",
            str(self.threads),
            # -c is the whole cache, shared out over the slots.
            "-c",
            str(self.context * self.slots),
            "-np",
            str(self.slots),
            "--jinja",
            "--no-webui",
        ]

    def start(self, port: int = 0) -> dict[str, str]:
        """Start the server (on ``port``, else a free one), wait until it
        answers, and return its environment."""
        self.require_installed()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or installer.free_port()
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            installer.wait_healthy(self.port, self.proc, self.log)
        except installer.Failure as failure:
            self.stop()
            raise LocalModelMissing(str(failure)) from None
        return self.env

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def env(self) -> dict[str, str]:
        """Return the variables that point every tier at this server."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "local",
            "OPENAI_MODEL": "local",
            "ARTOO_LLM_TIMEOUT_S": os.environ.get("ARTOO_LLM_TIMEOUT_S", LLM_TIMEOUT_S),
            # A round of a 1.5B model on 2 cores takes minutes, not seconds.
            "ARTOO_TIME_BUDGET_S": os.environ.get("ARTOO_TIME_BUDGET_S", TIME_BUDGET_S),
            "ARTOO_RUN_DEADLINE_S": os.environ.get("ARTOO_RUN_DEADLINE_S", "3600"),
            # A round's subtasks get as long as the model-tier clusters give them:
            # at the 300 s default one subtask of a busy box ends as an
            # infrastructure failure before its executor has answered.
            "ARTOO_FANIN_DEADLINE_S": os.environ.get(
                "ARTOO_FANIN_DEADLINE_S", CLUSTER_ENV["ARTOO_FANIN_DEADLINE_S"]
            ),
            # Greedy decoding: a small model's JSON and plans are steadier, and a
            # run can be repeated.
            "ARTOO_LLM_TEMPERATURE": os.environ.get("ARTOO_LLM_TEMPERATURE", "0"),
            "ARTOO_LLM_SEED": os.environ.get("ARTOO_LLM_SEED", "42"),
            # An attempt that answers a correction, and a second derivation, is
            # sampled a little warmer: greedy, it repeats the command that failed.
            "ARTOO_RETRY_TEMPERATURE": os.environ.get("ARTOO_RETRY_TEMPERATURE", "0.3"),
            "ARTOO_PLAN_CHAINS": os.environ.get("ARTOO_PLAN_CHAINS", "join"),
            # A small planner's steps mislead the executor of a one-step plan
            # ("count the lines" for accounts that use a shell): it runs the
            # request alone.
            "ARTOO_PLAN_STEPS": os.environ.get("ARTOO_PLAN_STEPS", "drop"),
        }

    def restart(self) -> None:
        """Start the server again on its port, its caches empty.

        The server's replies at temperature 0 depend on what its prompt cache
        holds (a prompt partly served from the cache is computed in other
        batches, and a greedy reply can tip), so a run that starts on a fresh
        server gives the replies any other such run would give.
        """
        port = self.port
        self.stop()
        self.start(port)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self) -> LocalModel:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
