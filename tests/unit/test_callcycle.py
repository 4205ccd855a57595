"""A cycle of tool calls with unchanged results is told from progress."""

from __future__ import annotations

from roles.call_laps import KEEP, Laps

GLOB = ("glob", '{"pattern": "**/*.yaml"}')
READ = ("read_file", '{"path": "/srv/db/config.yaml"}')
WRITE = ("write_file", '{"path": "/srv/db/config.yaml"}')


def laps(*done: tuple[tuple[str, str], str]) -> Laps:
    seen = Laps()
    for call, result in done:
        seen.add(call, result)
    return seen


def test_a_third_round_of_two_calls_with_the_same_results_is_a_cycle():
    seen = laps((GLOB, "(no files)"), (READ, "ERROR: no such file"))
    seen.add(GLOB, "(no files)")
    assert seen.period(READ) == 0  # a second round may still differ
    seen.add(READ, "ERROR: no such file")
    assert seen.period(GLOB) == 2
    assert seen.period(READ) == 0  # the repeat guard's case, not a round
    assert seen.period(WRITE) == 0


def test_a_round_of_three_calls_is_a_cycle():
    done = [(GLOB, "a"), (READ, "b"), (WRITE, "blocked")]
    assert laps(*done, *done).period(GLOB) == 3
    assert laps(*done, *done).period(READ) == 0


def test_a_result_that_changed_is_progress_not_a_cycle():
    # A flaky script fails, the model reads it, runs it again: it now works.
    run = ("shell", '{"command": "./report.sh"}')
    cat = ("read_file", '{"path": "report.sh"}')
    seen = laps((run, "[exit code 1]"), (cat, "#!/bin/sh"), (run, "[exit code 0]"))
    seen.add(cat, "#!/bin/sh")
    assert seen.period(run) == 0
    same = laps((run, "[exit code 1]"), (cat, "x"), (run, "[exit code 1]"), (cat, "x"))
    assert same.period(run) == 2


def test_too_few_calls_make_no_cycle_and_the_state_round_trips():
    assert Laps().period(GLOB) == 0
    assert laps((GLOB, "a"), (READ, "b")).period(GLOB) == 0
    seen = laps(*[((f"t{n}", "{}"), str(n)) for n in range(20)])
    again = Laps(seen.state())
    assert again.state() == seen.state() and len(again.state()) == KEEP
    assert again.state()[-1][:2] == ["t19", "{}"]
