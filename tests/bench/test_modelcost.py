"""The real model's cost per role, from a session's trace records."""

from __future__ import annotations

import json
import sqlite3

from bench.modelcost import (
    main,
    role_costs,
    session_table,
    session_turns,
    solved_runs,
    turn_table,
)

RESULTS = """# artoo real-model tier
| task | kind | solved | false accept | directive | GGS path | rounds | prompt tok \
| completion tok | wall s | run |
|---|---|---|---|---|---|---|---|---|---|---|
| count-lines | answer | yes | no | accept | - | 1 | 900 | 90 | 100 | run-a |
| csv-sum | answer | no | no | abandon | - | 3 | 5000 | 400 | 900 | run-b |
"""


def session(tmp_path, calls):
    """Write a session directory: a trace table and the results table."""
    conn = sqlite3.connect(tmp_path / "db.sqlite3")
    conn.execute(
        "CREATE TABLE artoo_web_traceevent (role TEXT, run_id TEXT, kind TEXT, "
        "data TEXT)"
    )
    for role, run, prompt, completion, cached, first in calls:
        data = {"prompt_tokens": prompt, "completion_tokens": completion}
        data |= {"cached_tokens": cached, "first_token_ms": first}
        conn.execute(
            "INSERT INTO artoo_web_traceevent VALUES (?, ?, 'llm_call', ?)",
            (role, run.replace("-", ""), json.dumps(data)),
        )
    conn.execute(
        "INSERT INTO artoo_web_traceevent VALUES ('R3', 'runa', 'tool_call', '{}')"
    )
    conn.commit()
    conn.close()
    (tmp_path / "model-results.md").write_text(RESULTS)
    return tmp_path


CALLS = [
    ("R2", "run-a", 1000, 100, 400, 2000),
    ("R1", "run-a", 300, 30, 0, 900),
    ("R3", "run-a", 2000, 50, 1500, 3000),
    ("R3", "run-b", 4000, 80, 1000, 5000),
    ("R3", "run-b", 600, 20, 0, None),
]


def test_roles_are_costed_in_pipeline_order_with_solved_tasks_apart():
    costs = role_costs(CALLS, {"run-a"})
    assert [c.role for c in costs] == ["R1", "R2", "R3"]
    r3 = costs[2]
    assert (r3.calls, r3.prompt, r3.completion, r3.cached) == (3, 6600, 150, 2500)
    assert r3.solved_prompt == 2000
    assert r3.first_token == [3000, 5000]


def test_the_table_gives_shares_medians_and_a_total_line(tmp_path):
    text = session_table(session(tmp_path, CALLS) / "db.sqlite3", {"run-a"})
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:]}
    assert rows["R3"] == ("| R3 | 3 | 6,600 | 150 | 2,000 | 38% | 4.0 s / 5.0 s |")
    assert rows["all"].startswith("| all | 5 | 7,900 | 280 | 3,300 | 37% |")
    assert "tool_call" not in text


def test_the_table_can_cost_some_runs_of_a_session_only(tmp_path):
    db = session(tmp_path, CALLS) / "db.sqlite3"
    text = session_table(db, set(), {"run-b"})
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:]}
    assert set(rows) == {"R3", "all"}
    assert rows["R3"].startswith("| R3 | 2 | 4,600 | 100 | - |")


def test_a_session_without_timings_or_solved_tasks_says_so():
    costs = role_costs([("R1", "x", 10, 1, 0, None)], set())
    assert costs[0].row(0) == "| R1 | 1 | 10 | 1 | - | 0% | not reported |"


def test_solved_runs_are_read_from_the_results_table(tmp_path):
    path = tmp_path / "model-results.md"
    path.write_text(RESULTS)
    assert solved_runs(path) == {"run-a"}


def test_main_prints_the_newest_session_or_says_there_is_none(tmp_path, capsys):
    assert main([str(session(tmp_path, CALLS))]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"session {tmp_path.name}: 1 solved tasks")
    assert "| R2 | 1 | 1,000 | 100 | 1,000 | 40% | 2.0 s / 2.0 s |" in out
    assert main([str(tmp_path / "missing")]) == 2
    assert "holds no db.sqlite3" in capsys.readouterr().out


def test_make_bench_gets_the_totals_as_figures_and_no_error_without_a_session(
    tmp_path, capsys
):
    assert main([str(session(tmp_path, CALLS)), "--figures"]) == 0
    figures = {
        line.split("  ")[1].strip(): line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("figure  ")
    }
    # run-a is the one solved task: 1,000 + 300 + 2,000 prompt tokens.
    assert "3300" in figures["model prompt tok per solved task"]
    assert " 36.71 %" in figures["model prompt tok from cache"]
    assert " 4 " in figures["model first token R3 median"]
    assert "no target" in figures["model first token R1 median"]
    assert main([str(tmp_path / "missing"), "--figures"]) == 0


def turn_call(turn, prompt, cached):
    """Return an R3 call's trace data with ``turn - 1`` model replies in it."""
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for _ in range(turn - 1):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "out"},
        ]
    data = {"prompt_tokens": prompt, "completion_tokens": 9, "cached_tokens": cached}
    return {**data, "messages": messages}


def test_r3_prompt_tokens_are_tabled_by_the_turn_of_each_call(tmp_path, capsys):
    db = session(tmp_path, CALLS) / "db.sqlite3"
    conn = sqlite3.connect(db)
    rows = [
        ("R3", turn_call(2, 3000, 2000)),
        ("R3", turn_call(2, 4000, 2500)),
        ("R3", turn_call(2, 5000, 4900)),
        ("R3", turn_call(3, 6000, 5000)),
        ("R4a", turn_call(4, 9000, 0)),
    ]
    for role, data in rows:
        conn.execute(
            "INSERT INTO artoo_web_traceevent VALUES (?, 'runa', 'llm_call', ?)",
            (role, json.dumps(data)),
        )
    conn.commit()
    conn.close()
    # The three R3 calls of CALLS carry no messages: each is a first turn.
    assert session_turns(db).splitlines() == [
        "| turn | R3 calls | prompt tok median | uncached tok median |",
        "|---|---|---|---|",
        "| 1 | 3 | 2,000 | 600 |",
        "| 2 | 3 | 4,000 | 1,000 |",
        "| 3 | 1 | 6,000 | 1,000 |",
    ]
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "R3 prompt tokens by turn number\n\n| turn | R3 calls |" in out
    assert "| 3 | 1 | 6,000 | 1,000 |" in out


def test_a_session_without_r3_calls_has_no_turn_table():
    assert turn_table([]) == "no R3 calls"
