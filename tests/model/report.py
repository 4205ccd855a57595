"""The results table of a real-model session: one row per task, then totals.

The tuning tasks run twice: each under an account of its own (suite
``tuning``) and all in a row under one account (suite ``one-account``), where
memory of the earlier tasks reaches the later ones as it does for a person.
After the tables, the tasks solved in one and not the other are named.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

ONE_ACCOUNT = "one-account"
HEADER = (
    "| task | kind | solved | false accept | directive | GGS path | rounds "
    "| prompt tok | completion tok | wall s | run |"
)


@dataclass
class Row:
    """One task's line in the table (``note`` is what its verifier found)."""

    task: str
    kind: str
    suite: str = "tuning"  # or "practice", "held-out", "held-out-b", ONE_ACCOUNT
    run_id: str = ""
    solved: bool = False
    false_accept: bool = False
    directive: str = ""
    path: str = ""
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0  # the API's ``tokens`` of the run
    wall_s: float = 0.0
    note: str = ""


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


def line(row: Row) -> str:
    cells = (
        row.task,
        row.kind,
        yes(row.solved),
        "**YES**" if row.false_accept else "no",
        row.directive or "-",
        row.path or "-",
        str(row.rounds),
        str(row.prompt_tokens),
        str(row.completion_tokens),
        f"{row.wall_s:.0f}",
        row.run_id or "-",
    )
    return "| " + " | ".join(cells) + " |"


def totals(rows: list[Row]) -> list[str]:
    solved = [r for r in rows if r.solved]
    median = f"{statistics.median(r.wall_s for r in solved):.0f} s" if solved else "n/a"
    prompt = sum(r.prompt_tokens for r in rows)
    completion = sum(r.completion_tokens for r in rows)
    return [
        f"- solved: {len(solved)}/{len(rows)}",
        f"- false accepts: {sum(r.false_accept for r in rows)}",
        f"- median wall time per solved task: {median}",
        f"- total tokens: {prompt + completion} (prompt {prompt} + completion "
        f"{completion}, summed from each run's llm_call traces; the API's run "
        f"tokens add up to {sum(r.tokens for r in rows)})",
        f"- total wall time of the runs: {sum(r.wall_s for r in rows) / 60:.1f} min",
    ]


def one_account_changes(rows: list[Row]) -> list[str]:
    """Return the lines naming the tasks solved under one kind of account only.

    A regression is a task solved under its own account (suite ``tuning``) and
    not in the one-account sequence; a gain is the reverse. Only tasks run in
    both are compared, so a session that ran one of the two prints nothing.
    """
    alone = {r.task: r for r in rows if r.suite == "tuning"}
    shared = {r.task: r for r in rows if r.suite == ONE_ACCOUNT}
    both = [task for task in shared if task in alone]
    if not both:
        return []

    def named(tasks: list[str]) -> str:
        return ", ".join(
            f"{t} (own account {alone[t].run_id or '-'}, "
            f"one account {shared[t].run_id or '-'})"
            for t in tasks
        )

    lost = [t for t in both if alone[t].solved and not shared[t].solved]
    won = [t for t in both if shared[t].solved and not alone[t].solved]
    return [
        f"- compared: {len(both)} tasks; solved {sum(alone[t].solved for t in both)} "
        f"under their own accounts, {sum(shared[t].solved for t in both)} "
        "under one account",
        f"- one-account regressions: {named(lost) or 'none'}",
        f"- one-account gains: {named(won) or 'none'}",
    ]


def table(rows: list[Row], title: str) -> str:
    """Return the whole report as Markdown: one table per suite, apart, then
    the one-account sequence against the per-task accounts."""
    parts = [f"# {title}"]
    for suite in dict.fromkeys(r.suite for r in rows):
        mine = [r for r in rows if r.suite == suite]
        head = ["", f"## {suite} tasks", "", HEADER, "|" + "---|" * 11]
        notes = ["", "Verifiers:", ""] + [f"- {r.task}: {r.note}" for r in mine]
        parts += head + [line(r) for r in mine] + [""] + totals(mine) + notes
    changes = one_account_changes(rows)
    if changes:
        parts += ["", "## one-account against per-task accounts", "", *changes]
    return "\n".join(parts)
