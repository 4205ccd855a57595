"""The local model as one more process: ``ARTOO_MODEL=local`` and ``make test-model``.

``LocalModel(data_dir).start()`` starts the ``llama-server`` that ``make model``
built, on a free local port with the verified weights, waits until it answers,
and returns the environment that points every tier at it::

    with LocalModel(data_dir) as local:
        env.update(local.env)

``ARTOO_MODEL_SIZE`` picks the weights (1.5b, 0.5b), ``ARTOO_LOCAL_CONTEXT`` the
context window of one request (default 8192 tokens), ``ARTOO_LOCAL_THREADS`` the
threads and ``ARTOO_LOCAL_SLOTS`` how many requests the server decodes at once
(default 1; each slot has a context window of its own). ``ARTOO_LOCAL_DRAFT``
turns on speculative decoding: a draft model's size (``0.5b``, or ``0.5b:8`` for
up to 8 drafted tokens a step) or an n-gram lookup (``ngram-mod``). It is off by
default: ``bench/speculative.py`` measures whether it pays on this machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devtools import model as installer

DEFAULT_CONTEXT = 8192
# Tokens a draft proposes per step at most, unless the setting says: llama.cpp's
# own default, since on a CPU a longer draft costs its whole batch.
DRAFT_MAX = 3
# Speculation without a draft model: the reply's next tokens looked up among
# n-grams it and its prompt already hold.
LOOKUPS = ("ngram-simple", "ngram-mod")
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


def speculation(setting: str) -> tuple[installer.Weights | None, int, str]:
    """Return (draft weights, most tokens drafted a step, n-gram lookup) of an
    ``ARTOO_LOCAL_DRAFT`` value; raise ValueError naming what is accepted."""
    setting = setting.strip()
    if not setting:
        return None, 0, ""
    if setting in LOOKUPS:
        return None, 0, setting
    size, _, most = setting.partition(":")
    if size in installer.WEIGHTS and (not most or most.isdigit() and 0 < int(most)):
        return installer.WEIGHTS[size], int(most or DRAFT_MAX), ""
    raise ValueError(
        f"ARTOO_LOCAL_DRAFT must be a model size ({', '.join(installer.WEIGHTS)}), "
        f"optionally with ':N' drafted tokens (N ≥ 1), or one of "
        f"{', '.join(LOOKUPS)}; got {setting!r}"
    )


class LocalModelMissing(RuntimeError):
    """The weights or the server are not installed (``make model``)."""


class LocalModel:
    """Start, describe and stop one local llama-server."""

    def __init__(
        self,
        data_dir: Path,
        size: str | None = None,
        slots: int = 0,
        draft: str | None = None,
    ):
        self.data_dir = Path(data_dir)
        self.size = size or os.environ.get("ARTOO_MODEL_SIZE", "1.5b")
        draft = os.environ.get("ARTOO_LOCAL_DRAFT", "") if draft is None else draft
        self.draft, self.draft_max, self.lookup = speculation(draft)
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
        parts = [
            ("llama-server", installer.server_built(self.cache), "make model"),
            (
                "weights",
                installer.weights_verified(self.weights, self.model_file, False),
                "make model",
            ),
        ]
        if self.draft is not None:
            draft_file = self.cache / self.draft.filename
            parts.append(
                (
                    "draft weights",
                    installer.weights_verified(self.draft, draft_file, False),
                    f"python3 devtools/model.py --size {self.draft_size}",
                )
            )
        missing = [(what, fix) for what, ok, fix in parts if not ok]
        if missing:
            fixes = " and ".join(dict.fromkeys(f"`{fix}`" for _, fix in missing))
            raise LocalModelMissing(
                f"the local model is not installed "
                f"({', '.join(what for what, _ in missing)} missing in "
                f"{self.cache}): run {fixes} first"
            )

    @property
    def draft_size(self) -> str:
        """Return the size name of the draft model ('' when there is none)."""
        for size, weights in installer.WEIGHTS.items():
            if weights == self.draft:
                return size
        return ""

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
            *self.draft_flags(),
        ]

    def draft_flags(self) -> list[str]:
        """Return the flags that turn on speculative decoding, if any."""
        if self.lookup:
            return ["--spec-type", self.lookup]
        if self.draft is None:
            return []
        # llama.cpp infers a speculation type only from a draft GGUF made for
        # it (an MTP head); a plain smaller model of the family needs it named.
        return [
            "--spec-type",
            "draft-simple",
            "--spec-draft-model",
            str(self.cache / self.draft.filename),
            "--spec-draft-n-max",
            str(self.draft_max),
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
