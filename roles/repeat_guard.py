"""The executor's guard on repeated calls: once warned, the second time ends the calls.

A small model calls the same tool with the same arguments again, goes round
a cycle of calls whose results do not change (``roles.call_laps``), or asks
again for a call a GGS block refused. Each is answered once with a warning
that names the next step and the correction this attempt answers; the second
time the attempt's tool calls end and the model answers from what it has.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from roles.call_laps import LAP_ENDED, LAP_WARNING, Laps
from roles.toolloop import NO_MORE_CALLS, AnswerNow
from roles.tools import head_tail
from roles.tools.errors import ToolError, ToolPaused

__all__ = ["BLOCKED", "REFUSED_AGAIN", "REPEAT_WARNING", "RepeatGuard"]

# Said as a next step, not as a failure: a small model reports "duplicate call
# blocked" as the subtask's failure when the warning reads like an error.
ADVICE_CAP = 400
REPEAT_WARNING = (
    "DUPLICATE CALL BLOCKED: [{tool}] was already called with these exact "
    "arguments and its result is above; nothing failed. Next step: give your "
    "final JSON answer with what you have, or use a different tool, query or "
    "approach (to count, sum or search in a file you read, run a shell command "
    "such as grep -c, wc -l or awk). Repeating this call again ends your tool calls."
)
# What a GGS block's refusal starts with (roles.tools.specs.refuse).
BLOCKED = "blocked by GGS"
REFUSED_AGAIN = (
    "REFUSED AGAIN: this exact [{tool}] call was refused above, and it stays "
    "blocked for the whole run; nothing ran. Use another program or tool (see "
    "the standard commands), or give your final JSON answer. Asking for it once "
    "more ends your tool calls."
)


class RepeatGuard:
    """Block a call identical to the previous one, or one that would start a
    third round of a cycle of calls whose results did not change
    (``roles.call_laps``); on the second repeat (or cycle), end the calls: the
    model answers from the results it has (a small model that ran a script and
    got its output ran it twice more, and the attempt used to fail).

    The warning repeats the correction this attempt answers (``advice``): a
    small model that reads the same file again has lost it among the results.
    """

    def __init__(
        self,
        call: Callable[[str, Mapping[str, Any]], str],
        state=None,
        advice: str = "",
    ):
        self._call = call
        self._advice = head_tail(advice.strip(), ADVICE_CAP) if advice else ""
        last, self._repeats, laps, self._loops, refused = (
            *(state or (None, 0)),
            None,
            0,
            [],
        )[:5]
        self._last: tuple[str, str] | None = tuple(last) if last else None
        self._laps = Laps(laps)
        # Calls a GGS block refused in this attempt: asked again, they are
        # refused without a call, and a second time they end the calls.
        self._refused: list[list] = [list(r) for r in refused or ()]

    def __call__(self, name: str, args: Mapping[str, Any]) -> str:
        key = (name, json.dumps(args, sort_keys=True, default=str))
        again = next((r for r in self._refused if tuple(r[:2]) == key), None)
        if again is not None:
            again[2] += 1
            if again[2] >= 2:
                raise AnswerNow(
                    f"[{name}] was refused by a block again: {NO_MORE_CALLS}"
                )
            return self._advised(REFUSED_AGAIN.format(tool=name))
        if key == self._last:
            self._repeats += 1
            if self._repeats >= 2:
                raise AnswerNow(
                    f"[{name}] was called with identical arguments "
                    f"{self._repeats + 1} times in a row: {NO_MORE_CALLS}"
                )
            return self._advised(REPEAT_WARNING.format(tool=name))
        if period := self._laps.period(key):
            self._loops += 1
            if self._loops >= 2:
                raise AnswerNow(f"{LAP_ENDED.format(n=period)}: {NO_MORE_CALLS}")
            return self._advised(LAP_WARNING.format(n=period))
        before = self._last, self._repeats
        self._last, self._repeats = key, 0
        try:
            output = self._call(name, args)
        except ToolPaused:
            # The call is made again on resume: it must pass as it did now.
            self._last, self._repeats = before
            raise
        except ToolError as err:
            self._laps.add(key, f"ERROR: {err}")
            if str(err).startswith(BLOCKED):
                self._refused.append([*key, 0])
            raise
        self._laps.add(key, output)
        return output

    def _advised(self, warning: str) -> str:
        if self._advice:
            warning += (
                f" This attempt must fix what the validator found: {self._advice}"
            )
        return warning

    def state(self) -> tuple:
        """Return the last call, its repeats, the recent laps, the cycles
        warned about and the calls a block refused, as plain data."""
        last = list(self._last) if self._last else None
        return (last, self._repeats, self._laps.state(), self._loops, self._refused)
