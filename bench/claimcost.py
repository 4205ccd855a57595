"""What decided a real-model session's verdicts, and what the second derivation cost.

From the trace of a ``make test-model`` session: how often each rule of the
claims engine failed an attempt (the ``rule`` of each failing verdict of the
round's outcomes), how the second derivations ended (``re-derived`` pass or
fail, ``re-derivation-unconfirmed``), and their model calls, tokens and wall
time beside the session's whole::

    python bench/claimcost.py [SESSION_DIR]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / ".artoo" / "test" / "model"


def claims_table(db: Path) -> str:
    """Return the rules table and the second derivations' cost of ``db``."""
    with sqlite3.connect(db) as con:
        outcomes = con.execute(
            "SELECT payload FROM artoo_web_busmessage WHERE type = 'SubTaskOutcome'"
        ).fetchall()
        again = con.execute(
            "SELECT data FROM artoo_web_traceevent WHERE kind = 'rederivation'"
        ).fetchall()
        total = con.execute(
            "SELECT coalesce(sum(tokens), 0) FROM artoo_web_traceevent "
            "WHERE kind = 'llm_call'"
        ).fetchone()[0]
    failed, derived = Counter(), Counter()
    for (payload,) in outcomes:
        for verdict in json.loads(payload).get("criteria_verdicts") or ():
            rule = verdict.get("rule") or "-"
            if rule.startswith("re-deriv"):
                derived[f"{rule} {verdict.get('verdict')}"] += 1
            if verdict.get("verdict") == "fail":
                failed[rule] += 1
    costs = [json.loads(d) for (d,) in again]
    tokens = sum(c.get("tokens", 0) for c in costs)
    wall = sum(c.get("wall_ms", 0) for c in costs) / 1000
    lines = ["| rule that failed a subtask's last attempt | verdicts |", "|---|---|"]
    lines += [f"| {rule} | {n} |" for rule, n in failed.most_common()]
    lines += ["", "| second derivation | verdicts |", "|---|---|"]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(derived.items())]
    share = f"{tokens / total:.0%}" if total else "-"
    lines += [
        "",
        f"- second derivations: {len(costs)}, "
        f"{sum(c.get('model_calls', 0) for c in costs)} model calls, "
        f"{tokens:,} tokens ({share} of the session's {total:,}), {wall:.0f} s",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    found = sorted(SESSIONS.glob("*/db.sqlite3"), key=lambda p: p.stat().st_mtime)
    db = Path(argv[0]) / "db.sqlite3" if argv else (found[-1] if found else None)
    if db is None or not db.exists():
        print("no real-model session found (make test-model)")
        return 1
    print(claims_table(db))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
