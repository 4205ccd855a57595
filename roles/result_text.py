"""What a finished run tells its user, on the run page and in the CLI.

The records (the FinalResult, R2's NextMoves, the subtasks' outcomes) are the
roles' and the log's; ``report`` reads them for a person:

- one headline: what was asked and what came of it
  (``“ls /nope”: not done, nothing was completed.``), and after an accept
  the result checker's word on the result;
- what was completed, each step with its evidence (its output's head), and
  what was not, with its reason;
- why the run stopped, in plain words (no role codes, no loss terms);
- next moves that are actions: a move that copies the headline, the reason or
  the record's summary is dropped, and actions built from the outcomes stand
  in when none is left.

No text needs an emoji font: pictographs (✅ ❌) in the records are dropped
(``roles.wording``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from roles.claims.evidence import split_exit_code
from roles.contracts import FinalResult, NextMoves, SubTaskOutcome
from roles.ggs.summary import EARLIER_WORK
from roles.wording import plain

ASKED_CHARS = 80
EVIDENCE_CHARS = 300
# A move is a copy when this share of its words sits in runs of SHINGLE words
# that an avoided text (headline, reason, summary, rationale) also holds.
SHINGLE = 4
COPY_SHARE = 0.6
# Why a run ended from outside the loop (``runs.abandon``'s rationale), for
# records written before FinalResult carried a reason.
FORCED_REASONS = {
    "cancelled": "You cancelled the run before it finished.",
    "run deadline exceeded": "It ran past its time limit without a result.",
    "handler error": "An internal error stopped it.",
}
STOPPED = "It stopped before the task was done."


@dataclass(frozen=True)
class Step:
    """One subtask as the user reads it: what it was, and its evidence or reason."""

    what: str
    evidence: str = ""


@dataclass(frozen=True)
class Report:
    """What a finished run says: headline, steps, reason and next moves."""

    headline: str
    finished: bool
    answer: str = ""
    completed: tuple[Step, ...] = ()
    not_completed: tuple[Step, ...] = ()
    accomplished: str = ""
    reason: str = ""
    next_moves: tuple[str, ...] = ()
    moves_pending: bool = False


def report(
    asked: str,
    directive: str,
    final: FinalResult,
    outcomes: Sequence[SubTaskOutcome] = (),
    moves: NextMoves | None = None,
    *,
    cancelled: bool = False,
) -> Report:
    """Return what the run with this FinalResult (or direct answer) tells its user.

    ``directive`` is the record's own (``direct`` for R1's answer, which the
    FinalResult contract does not know); ``outcomes`` are the run's across
    rounds; ``moves`` is R2's NextMoves once written.
    """
    done = [o for o in outcomes if o.status == "matched"]
    failed = [o for o in outcomes if o.status != "matched"]
    finished = directive in ("accept", "success", "direct")
    headline = _headline(asked, directive, len(done), len(outcomes), cancelled)
    reason = "" if finished else stop_reason(final)
    abandoned = directive == "abandon"
    actions: tuple[str, ...] = ()
    if abandoned and moves is not None:
        avoid = [headline, reason, final.summary or "", final.rationale or ""]
        actions = _next_moves(moves, avoid, failed)
    return Report(
        headline=headline,
        finished=finished,
        answer=_answer(directive, final.summary or ""),
        completed=tuple(_completed(done, final.output)),
        not_completed=tuple(_not_completed(failed)),
        # R2's own words on the work, when the outcomes are not known.
        accomplished=plain(moves.accomplished) if moves and not outcomes else "",
        reason=reason,
        next_moves=actions,
        moves_pending=abandoned and moves is None and not cancelled,
    )


def stop_reason(final: FinalResult) -> str:
    """Return why an unfinished run stopped, in plain words."""
    if final.reason:
        return plain(final.reason)
    return FORCED_REASONS.get((final.rationale or "").strip(), STOPPED)


def fallback_moves(failed: Sequence[SubTaskOutcome]) -> list[str]:
    """Return 2 or 3 next moves built from the steps that failed."""
    moves = []
    if failed:
        name = _name(failed[0])
        moves.append(
            f"Run {name!r} yourself and fix what it needs (a path, a permission, "
            "a missing program), then send the task again."
        )
    else:
        moves.append("Split the task into smaller requests and send the first one.")
    moves.append(
        "Send the task again with more detail (exact paths, names or the "
        "expected output) so the planner can take a different approach."
    )
    return moves


def is_copy(move: str, texts: Iterable[str]) -> bool:
    """Return True when ``move`` mostly repeats runs of words of ``texts``."""
    words = _words(move)
    if len(words) < SHINGLE:
        return any(words and " ".join(words) in " ".join(_words(t)) for t in texts)
    shingles = {s for t in texts for s in _shingles(_words(t))}
    covered = set()
    for i in range(len(words) - SHINGLE + 1):
        if tuple(words[i : i + SHINGLE]) in shingles:
            covered.update(range(i, i + SHINGLE))
    return len(covered) >= COPY_SHARE * len(words)


def as_lines(result: Report, output: str = "") -> list[str]:
    """Return the report and the result's ``output`` as terminal lines (the CLI's)."""
    lines = [result.headline]
    if result.answer:
        lines.append(result.answer)
    if output:
        lines.append(f"output: {output}")
    if result.completed:
        lines.append("Completed:")
        lines += [_step_line(s) for s in result.completed]
    elif result.accomplished:
        lines.append(f"Completed: {result.accomplished}")
    if result.not_completed:
        lines.append("Not completed:")
        lines += [_step_line(s) for s in result.not_completed]
    if result.reason:
        lines.append(f"Why it stopped: {result.reason}")
    if result.next_moves:
        lines.append("Next moves:")
        lines += [f"  {i}. {m}" for i, m in enumerate(result.next_moves, 1)]
    return lines


def _headline(
    asked: str, directive: str, done: int, total: int, cancelled: bool
) -> str:
    # The lines of a task read as one: "echo one; echo two".
    lines = [plain(line) for line in (asked or "").splitlines()]
    quoted = f"“{_clip('; '.join(line for line in lines if line), ASKED_CHARS)}”"
    if directive == "direct":
        return f"{quoted}: answered directly."
    progress = _progress(done, total)
    if directive in ("accept", "success") and done == total:
        checked = " and checked" if directive == "accept" else ""
        return f"{quoted}: done" + (f", {progress}{checked}." if total else ".")
    if directive == "success":
        return f"{quoted}: done, close enough to the goal with {progress}."
    return f"{quoted}: {'cancelled' if cancelled else 'not done'}, {progress}."


def _answer(directive: str, summary: str) -> str:
    # An accept's summary is the result checker's word on the merged result;
    # the earlier rounds' work it appends is listed as completed steps.
    if directive != "accept":
        return ""
    return plain(summary.split(EARLIER_WORK)[0])


def _progress(done: int, total: int) -> str:
    if not done:
        return "nothing was completed"
    if done == total:
        return f"{_steps(done)} completed"
    return f"{done} of {total} steps completed"


def _completed(done: Sequence[SubTaskOutcome], final_output: Any) -> Iterable[Step]:
    shown = _words(_text(final_output))
    for outcome in done:
        text = _text(outcome.output)
        # The result's own output is shown whole: its step needs no copy of it.
        evidence = "" if _words(text) == shown else _clip(text, EVIDENCE_CHARS)
        yield Step(plain(_name(outcome)), evidence)


def _not_completed(failed: Sequence[SubTaskOutcome]) -> Iterable[Step]:
    for outcome in failed:
        reason = plain(outcome.failure_reason or "") or "no reason was given"
        yield Step(plain(_name(outcome)), _clip(reason, EVIDENCE_CHARS))


def _next_moves(
    moves: NextMoves, avoid: list[str], failed: Sequence[SubTaskOutcome]
) -> tuple[str, ...]:
    kept = [plain(m) for m in moves.next_moves or [] if not is_copy(m, avoid)]
    kept = [m for m in dict.fromkeys(kept) if m]
    return tuple(kept or fallback_moves(failed))


def _text(output: Any) -> str:
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, default=str)
    return split_exit_code(text.strip())[1].strip()


def _clip(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _step_line(step: Step) -> str:
    return f"  - {step.what}" + (f": {step.evidence}" if step.evidence else "")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _name(outcome: SubTaskOutcome) -> str:
    return outcome.intent or outcome.subtask_id
