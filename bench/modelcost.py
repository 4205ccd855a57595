"""What a real model costs per role, from a real-model session's trace records.

Per role: model calls, prompt and completion tokens, prompt tokens per solved
task (over the runs a verifier judged solved), the share of prompt tokens the
server served from its prompt cache, and the median and slowest time to the
first token (a call's time less the server's own generation time). Then R3's
prompt tokens by turn number: the median prompt and uncached (prompt less
cached) tokens of its calls at each turn of an attempt, the turn being one more
than the model's replies already in the call's conversation.

    python bench/modelcost.py [SESSION_DIR] [--figures]

reads ``db.sqlite3`` and ``model-results.md`` of a ``make test-model``
session (default: the newest under ``.artoo/test/model``) and prints the table
that ``make test-model`` also appends to ``model-results.md``, then each solved
task's wall time beside its floor from ``llama-server.log`` (``modelfloor.py``).
``--figures`` (``make bench``) also prints the totals, each role's time to the
first token and the wall time over the floor as figures, and only notes a
missing session: the model tier is never part of ``make bench``, which reports
the newest one it finds.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import modelfloor, report  # noqa: E402

SESSIONS = ROOT / ".artoo" / "test" / "model"
ROLE_ORDER = ("R1", "R2", "R3", "R4a", "R4b", "R6", "R7", "R8")
CALLS_SQL = (
    "SELECT role, run_id, coalesce(json_extract(data, '$.prompt_tokens'), 0), "
    "coalesce(json_extract(data, '$.completion_tokens'), 0), "
    "coalesce(json_extract(data, '$.cached_tokens'), 0), "
    "json_extract(data, '$.first_token_ms') "
    "FROM artoo_web_traceevent WHERE kind = 'llm_call'"
)
Call = tuple[str, str, int, int, int, int | None]
# An R3 call's turn: one more than the assistant messages it sends.
TURNS_SQL = (
    "SELECT 1 + (SELECT count(*) FROM json_each(data, '$.messages') "
    "WHERE json_extract(value, '$.role') = 'assistant'), "
    "coalesce(json_extract(data, '$.prompt_tokens'), 0), "
    "coalesce(json_extract(data, '$.cached_tokens'), 0) "
    "FROM artoo_web_traceevent WHERE kind = 'llm_call' AND role = 'R3'"
)


@dataclass
class RoleCost:
    """One role's model calls over a session."""

    role: str
    calls: int = 0
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    solved_prompt: int = 0
    first_token: list[int] = field(default_factory=list)

    def row(self, solved_runs: int) -> str:
        per_task = f"{self.solved_prompt / solved_runs:,.0f}" if solved_runs else "-"
        share = f"{self.cached / self.prompt:.0%}" if self.prompt else "-"
        if self.first_token:
            first = (
                f"{statistics.median(self.first_token) / 1000:.1f} s / "
                f"{max(self.first_token) / 1000:.1f} s"
            )
        else:
            first = "not reported"
        cells = (
            self.role,
            str(self.calls),
            f"{self.prompt:,}",
            f"{self.completion:,}",
            per_task,
            share,
            first,
        )
        return "| " + " | ".join(cells) + " |"


def role_costs(calls: Iterable[Call], solved: set[str]) -> list[RoleCost]:
    """Return the cost of each role that called the model, in pipeline order."""
    by_role: dict[str, RoleCost] = {}
    solved = {run.replace("-", "") for run in solved}
    for role, run_id, prompt, completion, cached, first_token in calls:
        cost = by_role.setdefault(role, RoleCost(role))
        cost.calls += 1
        cost.prompt += prompt
        cost.completion += completion
        cost.cached += min(cached, prompt)
        if str(run_id).replace("-", "") in solved:
            cost.solved_prompt += prompt
        if first_token is not None:
            cost.first_token.append(first_token)

    def order(role: str) -> tuple[int, str]:
        known = role in ROLE_ORDER
        return (ROLE_ORDER.index(role) if known else len(ROLE_ORDER), role)

    return [by_role[role] for role in sorted(by_role, key=order)]


def table(costs: list[RoleCost], solved_runs: int) -> str:
    """Return the per-role cost as Markdown, with a line of totals."""
    total = RoleCost("all")
    for cost in costs:
        total.calls += cost.calls
        total.prompt += cost.prompt
        total.completion += cost.completion
        total.cached += cost.cached
        total.solved_prompt += cost.solved_prompt
        total.first_token += cost.first_token
    head = (
        "| role | calls | prompt tok | completion tok | prompt tok per solved task "
        "| from prompt cache | first token median / max |"
    )
    lines = [head, "|" + "---|" * 7]
    lines += [cost.row(solved_runs) for cost in [*costs, total]]
    return "\n".join(lines)


def session_calls(db: Path) -> list[Call]:
    """Return every model call the trace of the database ``db`` records."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(CALLS_SQL).fetchall()
    finally:
        conn.close()


def session_table(db: Path, solved: set[str], runs: set[str] | None = None) -> str:
    """Return the per-role table of the session whose database is ``db``, over
    the runs ``runs`` (default: all)."""
    calls = session_calls(db)
    if runs is not None:
        wanted = {run.replace("-", "") for run in runs}
        calls = [c for c in calls if str(c[1]).replace("-", "") in wanted]
    return table(role_costs(calls, solved), len(solved))


def turn_table(calls: Iterable[tuple[int, int, int]]) -> str:
    """Return R3's median prompt and uncached tokens at each turn as Markdown,
    from ``(turn, prompt tokens, cached tokens)`` of its calls."""
    by_turn: dict[int, list[tuple[int, int]]] = {}
    for turn, prompt, cached in calls:
        by_turn.setdefault(turn, []).append((prompt, prompt - min(cached, prompt)))
    lines = [
        "| turn | R3 calls | prompt tok median | uncached tok median |",
        "|" + "---|" * 4,
    ]
    for turn in sorted(by_turn):
        prompts, uncached = zip(*by_turn[turn], strict=True)
        cells = (
            str(turn),
            str(len(prompts)),
            f"{statistics.median(prompts):,.0f}",
            f"{statistics.median(uncached):,.0f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) if by_turn else "no R3 calls"


def session_turns(db: Path) -> str:
    """Return the R3 prompt tokens by turn of the session whose database is
    ``db``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return turn_table(conn.execute(TURNS_SQL).fetchall())
    finally:
        conn.close()


def solved_runs(results: Path) -> set[str]:
    """Return the run ids that ``model-results.md`` marks solved: its rows are
    ``| task | kind | solved | … | run |``."""
    runs = set()
    for line in results.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 3 and cells[2] == "yes":
            runs.add(cells[-1])
    return runs


def print_figures(costs: list[RoleCost], solved_runs: int) -> None:
    """Print a session's totals and each role's median time to the first token
    as ``make bench`` figures (no targets: the issue sets none)."""
    load = report.Load()
    prompt = sum(cost.prompt for cost in costs)
    cached = sum(cost.cached for cost in costs)
    solved_prompt = sum(cost.solved_prompt for cost in costs)
    if solved_runs:
        per_task = solved_prompt / solved_runs
        report.figure(
            "model prompt tok per solved task", per_task, None, "≤", "tok", load
        )
    if prompt:
        share = 100 * cached / prompt
        report.figure("model prompt tok from cache", share, None, "≥", "%", load)
    for cost in costs:
        if cost.first_token:
            first = statistics.median(cost.first_token) / 1000
            report.figure(
                f"model first token {cost.role} median", first, None, "≤", "s", load
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", nargs="?", type=Path, help="a session directory")
    parser.add_argument(
        "--figures",
        action="store_true",
        help="print figures; a missing session is no error",
    )
    args = parser.parse_args(argv)
    missing = 0 if args.figures else 2
    session = args.session
    if session is None:
        found = sorted(SESSIONS.glob("*/db.sqlite3")) if SESSIONS.is_dir() else []
        if not found:
            print(f"no real-model session under {SESSIONS}: run `make test-model`")
            return missing
        session = found[-1].parent
    db, results = session / "db.sqlite3", session / "model-results.md"
    if not db.is_file():
        print(f"{session} holds no db.sqlite3")
        return missing
    solved = solved_runs(results) if results.is_file() else set()
    calls = session_calls(db)
    print(f"session {session.name}: {len(solved)} solved tasks")
    print(session_table(db, solved))
    print(f"\nR3 prompt tokens by turn number\n\n{session_turns(db)}")
    floor, floor_tasks = modelfloor.session_floor(session)
    print(f"\n{floor}")
    if args.figures:
        print_figures(role_costs(calls, solved), len(solved))
        modelfloor.print_figures(floor_tasks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
