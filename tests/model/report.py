"""The results table of a real-model session: one row per task, then totals.

The tuning tasks run twice: each under an account of its own (suite
``tuning``) and all in a row under one account (suite ``one-account``), where
memory of the earlier tasks reaches the later ones as it does for a person.
After the tables, the tasks solved in one and not the other are named.

Projects (kind ``project``, suite ``projects``) get a table of their own: was
the project finished (``complete``) and its verifier satisfied, how many task
runs and escalations it took, its tokens (the runs' and its own agents'), its
wall time and whether "done" was ever accepted while the verifier failed (a
false done, counted as a false accept).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

ONE_ACCOUNT = "one-account"
PROJECTS = "projects"
HEADER = (
    "| task | kind | solved | false accept | directive | GGS path | rounds "
    "| prompt tok | completion tok | wall s | run |"
)
PROJECT_HEADER = (
    "| task | kind | solved | false done | finished | tasks run | escalations "
    "| tokens | wall s | run |"
)


@dataclass
class Row:
    """One task's line in the table (``note`` is what its verifier found)."""

    task: str
    kind: str
    suite: str = "tuning"  # or "practice", "held-out", "held-out-b", "held-out-c",
    # "held-out-d", ONE_ACCOUNT, PROJECTS: then ``directive`` is the project's status,
    # ``rounds`` its task runs, ``tokens`` all of its tokens and ``false_accept``
    # a false done.
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
    escalations: int = 0  # a project's


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


def project_line(row: Row) -> str:
    finished = "yes" if row.directive == "complete" else f"no ({row.directive or '-'})"
    cells = (
        row.task,
        row.kind,
        yes(row.solved),
        "**YES**" if row.false_accept else "no",
        finished,
        str(row.rounds),
        str(row.escalations),
        str(row.tokens),
        f"{row.wall_s:.0f}",
        row.run_id or "-",
    )
    return "| " + " | ".join(cells) + " |"


def project_totals(rows: list[Row]) -> list[str]:
    finished = sum(r.directive == "complete" for r in rows)
    minutes = sum(r.wall_s for r in rows) / 60
    return [
        f"- finished: {finished}/{len(rows)}; solved (verifier satisfied): "
        f"{sum(r.solved for r in rows)}/{len(rows)}",
        f"- false dones: {sum(r.false_accept for r in rows)}",
        f"- task runs: {sum(r.rounds for r in rows)}; escalations: "
        f"{sum(r.escalations for r in rows)}",
        f"- total tokens: {sum(r.tokens for r in rows)} (runs and project agents)",
        f"- total wall time of the projects: {minutes:.1f} min",
    ]


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
        notes = ["", "Verifiers:", ""] + [f"- {r.task}: {r.note}" for r in mine]
        if suite == PROJECTS:
            head = ["", "## projects", "", PROJECT_HEADER, "|" + "---|" * 10]
            body = [project_line(r) for r in mine] + [""] + project_totals(mine)
        else:
            head = ["", f"## {suite} tasks", "", HEADER, "|" + "---|" * 11]
            body = [line(r) for r in mine] + [""] + totals(mine)
        parts += head + body + notes
    changes = one_account_changes(rows)
    if changes:
        parts += ["", "## one-account against per-task accounts", "", *changes]
    return "\n".join(parts)
