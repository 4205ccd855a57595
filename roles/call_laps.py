"""A tool loop that goes round in circles: the same calls, with the same results.

The executor's repeat guard blocks a call identical to the one just made. A
small model that has lost its way also repeats a cycle of several calls —
``glob``, ``read_file``, ``glob``, ``read_file`` … — each different from the one
before it, until its turns run out with no answer (renamed-file in the control
bench: the file it needed had been read, and ten turns went by). ``Laps`` keeps
the last calls of an attempt and their results, and says when the next call
would start a third round of a cycle that went round twice to no effect.

Two rounds count only when every call of the second returned what it returned
in the first: a command whose output changed (a flaky script that now works, a
file that was written in between) has told the model something new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

# Cycles of 2 to 4 calls; a cycle of 1 is the repeat guard's.
PERIODS = (2, 3, 4)
KEEP = 2 * max(PERIODS)

Call = tuple[str, str]  # (tool, JSON arguments)

# Said as a next step, like the repeat guard's warning: nothing failed.
LAP_WARNING = (
    "CYCLE BLOCKED: this call would start a third round of the same {n} "
    "calls, whose results did not change: nothing new can come of it, and "
    "nothing failed. Next step: give your final JSON answer from the results "
    "above, or take a different approach. Going round again ends your tool calls."
)
LAP_ENDED = "a cycle of {n} calls was started again with the same results"


def digest(result: str) -> str:
    """Return a short fingerprint of a tool result (the state keeps no outputs)."""
    return hashlib.blake2b(result.encode("utf-8", "replace"), digest_size=8).hexdigest()


class Laps:
    """The last calls of an attempt, to tell a cycle from progress."""

    def __init__(self, state: Sequence[Sequence[str]] | None = None):
        self._done: list[tuple[str, str, str]] = [
            (str(a), str(b), str(c)) for a, b, c in (state or ())
        ][-KEEP:]

    def add(self, call: Call, result: str) -> None:
        """Record a call that ran and its result."""
        self._done = [*self._done, (*call, digest(result))][-KEEP:]

    def period(self, call: Call) -> int:
        """Return the length of the cycle ``call`` would start a third round of,
        or 0: the last ``2p`` calls are two rounds of the same ``p`` calls with
        the same results, and ``call`` is the first call of a round.
        """
        done = self._done
        for p in PERIODS:
            if len(done) < 2 * p:
                continue
            first, again = done[-2 * p : -p], done[-p:]
            if first == again and again[0][:2] == tuple(call):
                return p
        return 0

    def state(self) -> list[list[str]]:
        """Return the recorded calls as plain data."""
        return [list(entry) for entry in self._done]
