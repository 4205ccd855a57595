"""A real-model session's solved tasks beside the floor of llama-server's speed."""

from __future__ import annotations

import pytest

from bench.modelcost import main
from bench.modelfloor import read_speeds
from tests.bench.test_modelcost import session as trace_session

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

CALLS = [
    ("R1", "run-a", 400, 40, 0, 900),
    ("R3", "run-a", 600, 60, 400, 2000),
    ("R3", "run-b", 5000, 400, 1000, 3000),
    ("R3", "run-c", 500, 20, 0, None),
]


def session(tmp_path, log=LOG):
    """Write a session directory: the trace table, the results, the server's log."""
    trace_session(tmp_path, CALLS)
    (tmp_path / "model-results.md").write_text(RESULTS)
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
    assert "| count-lines | 600 | 100 | 60 | 8 | 7.5 |" in out
    # run-c: 500 / 200 + 20 / 20 = 3.5 s under 20 s.
    assert "| count-lines | 500 | 20 | 20 | 4 | 5.7 |" in out
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
