"""The claims report reads a session's verdict rules and second derivations."""

from __future__ import annotations

import json
import sqlite3

from bench.claimcost import claims_table


def test_the_rules_that_failed_and_the_second_derivations_are_counted(tmp_path):
    db = tmp_path / "db.sqlite3"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE artoo_web_busmessage (type TEXT, payload TEXT)")
        con.execute(
            "CREATE TABLE artoo_web_traceevent (kind TEXT, data TEXT, tokens INT)"
        )
        verdicts = [
            {"rule": "counter-ignores-word", "verdict": "fail"},
            {"rule": "re-derived", "verdict": "pass"},
            {"rule": "re-derivation-unconfirmed", "verdict": "fail"},
        ]
        con.execute(
            "INSERT INTO artoo_web_busmessage VALUES ('SubTaskOutcome', ?)",
            (json.dumps({"criteria_verdicts": verdicts}),),
        )
        con.execute("INSERT INTO artoo_web_traceevent VALUES ('llm_call', '{}', 1000)")
        cost = {"model_calls": 2, "tokens": 250, "wall_ms": 30000}
        con.execute(
            "INSERT INTO artoo_web_traceevent VALUES ('rederivation', ?, 0)",
            (json.dumps(cost),),
        )
    text = claims_table(db)
    assert "| counter-ignores-word | 1 |" in text
    assert "| re-derived pass | 1 |" in text
    assert "| re-derivation-unconfirmed fail | 1 |" in text
    said = "second derivations: 1, 2 model calls, 250 tokens (25% of the session's"
    assert f"{said} 1,000), 30 s" in text
