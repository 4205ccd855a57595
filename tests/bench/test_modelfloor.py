"""A real-model session's solved tasks beside the floor of llama-server's speed."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bench.modelcost import main
from bench.modelfloor import read_requests, read_speeds

PREFIX = "28.21.558.582 I slot print_timing: id  0 | task 7395 | "
LOG = [
    "0.03.814.468 I srv  llama_server: listening on http://127.0.0.1:60313",
    f"{PREFIX}n_gen =    100, tg =  32.98 t/s, tg_3s =  33.31 t/s",
    f"{PREFIX}prompt eval time =    1500.00 ms /   100 tokens (   15.00 ms per "
    "token,    66.67 tokens per second)",
    f"{PREFIX}       eval time =    3000.00 ms /    20 tokens (  150.00 ms per "
    "token,     6.67 tokens per second)",
    f"{PREFIX}      total time =    4500.00 ms /   120 tokens",
    # A second, faster request: the speeds are its tokens and time added to the
    # first's (200 and 20 tok/s), not the mean of the two (333 and 33 tok/s).
    f"{PREFIX}prompt eval time =     500.00 ms /   300 tokens (    1.67 ms per "
    "token,   600.00 tokens per second)",
    f"{PREFIX}       eval time =    1000.00 ms /    60 tokens (   16.67 ms per "
    "token,    60.00 tokens per second)",
    # A request wholly from the prompt cache, and a malformed line.
    f"{PREFIX}prompt eval time =      12.00 ms /     0 tokens (    0.00 ms per "
    "token,     0.00 tokens per second)",
    f"{PREFIX}       eval time =       0.00 ms /     0 tokens",
    f"{PREFIX}prompt eval time =   fast ms /   seven tokens",
]

RESULTS = """# artoo real-model tier

## tuning tasks

| task | kind | solved | false accept | directive | GGS path | rounds | prompt tok \
| completion tok | wall s | run |
|---|---|---|---|---|---|---|---|---|---|---|
| count-lines | answer | yes | no | accept | - | 1 | 1000 | 100 | 60 | run-a |
| csv-sum | answer | no | no | abandon | - | 3 | 5000 | 400 | 900 | run-b |

- solved: 1/2

## one-account tasks

| task | kind | solved | false accept | directive | GGS path | rounds | prompt tok \
| completion tok | wall s | run |
|---|---|---|---|---|---|---|---|---|---|---|
| count-lines | answer | yes | no | accept | - | 1 | 500 | 20 | 20 | run-c |
"""

DAY = "2026-12-04"
CALLS = [
    ("R1", "run-a", 400, 40, 0, 900),
    ("R3", "run-a", 600, 60, 400, 2000),
    ("R3", "run-b", 5000, 400, 1000, 3000),
    ("R3", "run-c", 500, 20, 0, None),
]


def session(tmp_path, log=LOG, calls=CALLS, results=RESULTS, runs=()):
    """Write a session directory: the trace and run tables, the results, the
    server's log. ``calls`` may end with the time the trace wrote the call,
    ``runs`` are (run, created, finished)."""
    conn = sqlite3.connect(tmp_path / "db.sqlite3")
    conn.execute(
        "CREATE TABLE artoo_web_traceevent (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "role TEXT, run_id TEXT, kind TEXT, data TEXT, created_at TEXT)"
    )
    conn.execute(
        "CREATE TABLE artoo_web_run (id TEXT PRIMARY KEY, created_at TEXT, "
        "finished_at TEXT)"
    )
    for role, run, prompt, completion, cached, first, *at in calls:
        data = {"prompt_tokens": prompt, "completion_tokens": completion}
        data |= {"cached_tokens": cached, "first_token_ms": first}
        conn.execute(
            "INSERT INTO artoo_web_traceevent (role, run_id, kind, data, created_at) "
            "VALUES (?, ?, 'llm_call', ?, ?)",
            (
                role,
                run.replace("-", ""),
                json.dumps(data),
                f"{DAY} {at[0]}" if at else "",
            ),
        )
    for run, created, finished in runs:
        conn.execute(
            "INSERT INTO artoo_web_run VALUES (?, ?, ?)",
            (run.replace("-", ""), f"{DAY} {created}", f"{DAY} {finished}"),
        )
    conn.commit()
    conn.close()
    (tmp_path / "model-results.md").write_text(results)
    if log is not None:
        (tmp_path / "llama-server.log").write_text("\n".join(log) + "\n")
    return tmp_path


def test_the_log_gives_total_tokens_over_total_time_skipping_empty_and_bad_lines():
    speed = read_speeds(LOG)
    assert speed.requests == 3
    assert (speed.prompt_tokens, speed.prompt_ms) == (400, 2000.0)
    assert (speed.gen_tokens, speed.gen_ms) == (80, 4000.0)
    # 400 prompt tokens at 200 tok/s and 80 completion tokens at 20 tok/s.
    assert speed.seconds(400, 80) == pytest.approx(6.0)
    line = speed.line()
    assert "prompt 200.0 tok/s, generation 20.0 tok/s over 3 requests" in line


def test_each_solved_task_is_set_beside_its_floor_with_totals(tmp_path, capsys):
    assert main([str(session(tmp_path))]) == 0
    out = capsys.readouterr().out
    # run-a: 1,000 prompt less 400 cached at 200 tok/s is 3 s, 100 completion
    # tokens at 20 tok/s 5 s: a floor of 8 s under 60 s of wall time.
    assert "| count-lines | 600 | 100 | 60 | 8 | 7.5 | session |" in out
    # run-c: 500 / 200 + 20 / 20 = 3.5 s under 20 s.
    assert "| count-lines | 500 | 20 | 20 | 4 | 5.7 | session |" in out
    assert "csv-sum" not in out.split("| solved task |")[1]
    assert (
        "- 2 solved tasks: 810 tok per solved task (uncached prompt 550 + "
        "completion 60); median wall 40 s, median floor 6 s; wall / floor 7.0 "
        "(80 s over 12 s)"
    ) in out


def test_make_bench_gets_the_wall_over_the_floor_as_figures(tmp_path, capsys):
    assert main([str(session(tmp_path)), "--figures"]) == 0
    figures = {
        line.split("  ")[1].strip(): line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("figure  ")
    }
    assert " 810 tok" in figures["model tok per solved task"]
    assert " 40 s" in figures["model wall per solved task median"]
    # 80 s of wall time over 11.5 s of floor.
    assert " 6.957 x" in figures["model wall / floor (solved tasks)"]


def test_without_a_server_log_the_floor_is_na_with_the_reason(tmp_path, capsys):
    assert main([str(session(tmp_path, log=None)), "--figures"]) == 0
    out = capsys.readouterr().out
    assert "floor: n/a (the session holds no llama-server.log)" in out
    assert "model wall / floor" not in out
    assert "model prompt tok per solved task" in out


def test_a_log_without_timings_gives_no_floor(tmp_path, capsys):
    assert main([str(session(tmp_path, log=LOG[:2]))]) == 0
    assert "floor: n/a (no timings in llama-server.log (0 requests))" in (
        capsys.readouterr().out
    )


def timings(clock, prompt, prompt_ms, gen, gen_ms):
    """Return the two timing lines llama-server logs at the end of a request."""
    prefix = f"{clock} I slot print_timing: id  0 | task 9 | "
    return [
        f"{prefix}prompt eval time = {prompt_ms:10.2f} ms / {prompt:5d} tokens",
        f"{prefix}       eval time = {gen_ms:10.2f} ms / {gen:5d} tokens",
    ]


# The server started at 12:00:00 and ran fast for run-a (100 and 20 tok/s),
# then slow from 12:01:30, while something else held the CPU (25 and 5 tok/s).
BUSY_LOG = [
    "0.00.000.791 I srv  llama_server: initializing ...",
    *timings("0.10.000.000", 100, 1000, 40, 2000),
    *timings("0.20.000.000", 100, 1000, 20, 1000),
    *timings("1.30.000.000", 100, 4000, 40, 8000),
    *timings("2.00.000.000", 100, 4000, 20, 4000),
]
BUSY_CALLS = [
    # A trace is written once the reply is in, some late (run-a's first call
    # 10.5 s, run-b's 14 s, as a tool loop's are): the least late sets the clock.
    ("R1", "run-a", 300, 40, 200, None, "12:00:20.500000"),
    ("R3", "run-a", 100, 20, 0, None, "12:00:20.600000"),
    ("R3", "run-b", 100, 40, 0, None, "12:01:44.000000"),
    # Its trace left out the 200 tokens the server served from its cache.
    ("R3", "run-d", 300, 20, 0, None, "12:02:00.300000"),
    # No request of the log has its tokens, nor ran while it did.
    ("R3", "run-c", 200, 16, 0, None, "12:05:00.000000"),
]
BUSY_RUNS = [
    ("run-a", "12:00:00", "12:01:00"),
    ("run-b", "12:01:05", "12:01:45"),
    ("run-d", "12:01:46", "12:02:10"),
    ("run-c", "12:04:50", "12:05:10"),
]
ROW = "| {} | answer | yes | no | accept | - | 1 | 0 | 0 | {} | {} |"
HEAD = RESULTS.splitlines()[4:6]
BUSY_RESULTS = "\n".join(
    [
        *HEAD,
        ROW.format("fast", 60, "run-a"),
        ROW.format("slow", 40, "run-b"),
        ROW.format("uncounted", 24, "run-d"),
        ROW.format("unlogged", 20, "run-c"),
    ]
)


def busy_session(tmp_path, log=BUSY_LOG, results=BUSY_RESULTS):
    return session(tmp_path, log, BUSY_CALLS, results, BUSY_RUNS)


def test_a_slow_stretch_gives_each_task_the_floor_of_its_own_requests(tmp_path, capsys):
    assert main([str(busy_session(tmp_path))]) == 0
    out = capsys.readouterr().out
    # The session's speeds, 40 and 8 tok/s, would give run-a 12.5 s and run-b
    # 7.5 s; their own requests took 5 s and 12 s.
    assert "prompt 40.0 tok/s, generation 8.0 tok/s over 4 requests" in out
    assert "| fast | 200 | 60 | 60 | 5 | 12.0 | its requests |" in out
    assert "| slow | 100 | 40 | 40 | 12 | 3.3 | its requests |" in out
    # run-d's calls match no request: its 300 and 20 tokens at the speeds of
    # the one request logged between its start and end (25 and 5 tok/s).
    assert "| uncounted | 300 | 20 | 24 | 16 | 1.5 | its window |" in out
    assert "wall / floor 3.6 (144 s over 40 s)" in out
    assert "- floor from its requests (the sum of llama-server's timings" in out
    assert "of its own requests): 2 of 4 tasks" in out
    assert "while it ran): 1 of 4 tasks" in out


def test_a_task_outside_any_logged_request_falls_back_to_the_session_speeds(
    tmp_path, capsys
):
    assert main([str(busy_session(tmp_path))]) == 0
    out = capsys.readouterr().out
    # 200 / 40 + 16 / 8 = 7 s, and the table says where it came from.
    assert "| unlogged | 200 | 16 | 20 | 7 | 2.9 | session |" in out
    assert "- floor from session (its tokens at the session's speeds" in out
    assert "in its window in the log): 1 of 4 tasks" in out


def test_a_restart_of_the_server_leaves_its_unmatched_requests_undated(
    tmp_path, capsys
):
    # The clock goes back: the last request is from a second start of the
    # server, which no matched call dates, so run-d's window holds no request.
    log = [*BUSY_LOG[:7], "0.00.000.500 I srv  llama_server: initializing ..."]
    log += BUSY_LOG[7:]
    assert [r.start for r in read_requests(log)] == [0, 0, 0, 1]
    assert main([str(busy_session(tmp_path, log))]) == 0
    assert "| uncounted | 300 | 20 | 24 | 10 | 2.4 | session |" in (
        capsys.readouterr().out
    )


def test_a_wall_time_under_the_floor_is_a_measurement_problem_not_a_result(
    tmp_path, capsys
):
    results = "\n".join([*HEAD, ROW.format("fast", 4, "run-a")])
    assert main([str(busy_session(tmp_path, results=results)), "--figures"]) == 0
    out = capsys.readouterr().out
    assert (
        "| fast | 200 | 60 | 4 | 5 | floor > wall: a measurement problem "
        "| its requests |"
    ) in out
    assert (
        "wall / floor n/a: the floor exceeds the wall time, a measurement problem "
        "(4 s over 5 s)"
    ) in out
    assert "a measurement problem and no result: fast" in out
    assert "wall / floor 0.8" not in out and "| 0.8 |" not in out
    assert "figure  model wall / floor" not in out
    assert "no figure, the floor (5 s) exceeds the wall time (4 s)" in out
