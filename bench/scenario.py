"""One scenario of the control bench: a prepared task and what it exercises.

Each scenario is a ``devtools.tasks.Task`` (a directory, a request, an
independent verifier) with three marks:

    expect   first-time   the obvious approach works
             recoverable  the first attempt fails; a different approach succeeds
             impossible   nothing can succeed; the right end is an abandon
    failure  environmental  the world is not as stated (a file elsewhere, a
                            tool missing, a directory denied, a flaky command,
                            an unreachable URL)
             logical        the obvious approach runs and gives a wrong answer
                            a machine check catches
             none           (first-time scenarios)
    suite    tuning     a failure seen here may be looked at and fixed
             held-out   written before any fix and never tuned on: a failure
                        seen here is reported, not turned into a rule

Every number a verifier expects is worked out from the prepared files, never
taken from what a run says about itself.
"""

from __future__ import annotations

import csv
import socket
from dataclasses import dataclass
from pathlib import Path

from devtools import tasks
from devtools.tasks import Task, Verdict

EXPECTS = ("first-time", "recoverable", "impossible")
FAILURES = ("environmental", "logical", "none")
SUITES = ("tuning", "held-out")
# Nothing listens here (checked when a scenario that needs it is prepared).
DEAD_HOST, DEAD_PORT = "127.0.0.1", 9
DEAD_URL = f"http://{DEAD_HOST}:{DEAD_PORT}"


@dataclass(frozen=True)
class Scenario:
    """One task of the suite with what it exercises."""

    task: Task
    expect: str
    failure: str
    suite: str = "tuning"

    def __post_init__(self) -> None:
        if (
            self.expect not in EXPECTS
            or self.failure not in FAILURES
            or self.suite not in SUITES
        ):
            raise ValueError(
                f"{self.task.name}: bad marks {self.expect}/{self.failure}/{self.suite}"
            )

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def group(self) -> str:
        """Return the class a memory pass is reported by."""
        return self.failure if self.expect == "recoverable" else self.expect


def require_dead_url() -> None:
    """Raise Unavailable when something answers on the port the URL names."""
    with socket.socket() as sock:
        sock.settimeout(1)
        if sock.connect_ex((DEAD_HOST, DEAD_PORT)) == 0:
            raise tasks.Unavailable(f"{DEAD_HOST}:{DEAD_PORT} answers; it must not")


def csv_rows(path: Path, encoding: str = "utf-8") -> list[dict]:
    with open(path, newline="", encoding=encoding) as fh:
        return list(csv.DictReader(fh))


def verify_never(reason: str):
    """Return a verifier that no answer satisfies (an impossible scenario's)."""

    def verify(d: Path, text: str) -> Verdict:
        return Verdict(False, reason)

    return verify


def answer(name, prompt, prepare, verify, **kw) -> Task:
    return Task(name, "answer", prompt, prepare, verify, **kw)
