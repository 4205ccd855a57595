"""bench/control.py stops on SIGTERM after the run in progress, at once on a second."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest

from bench import control
from bench.control_report import Result
from bench.scenarios import SCENARIOS


@pytest.fixture
def stop():
    before = signal.getsignal(signal.SIGTERM)
    yield control.StopRequest().install()
    signal.signal(signal.SIGTERM, before)


def suite(
    stop, kill_after: int, kills: int = 1, jobs: int = 1, memory_off: bool = False
) -> tuple[list[tuple], list[int]]:
    ran, dreamed = [], []

    def attempt(scenario, strategy, pass_no, memory=True):
        ran.append((scenario.name, strategy, pass_no, *(() if memory else ("off",))))
        if len(ran) == kill_after:
            for _ in range(kills):
                os.kill(os.getpid(), signal.SIGTERM)
        # A run lasts until the stop is heard, so no job starts another before.
        wait_until = time.monotonic() + (5 if kill_after and jobs > 1 else 0)
        while not stop.requested and time.monotonic() < wait_until:
            time.sleep(0.01)
        s = scenario
        return Result(s.name, s.expect, s.failure, s.group, strategy, pass_no)

    bench = SimpleNamespace(
        opts=SimpleNamespace(
            passes=2,
            scenarios=SCENARIOS[:2],
            strategies=["ggs", "retry"],
            jobs=jobs,
            memory_off=memory_off,
        ),
        stop=stop,
        dreams=[],
        cluster=SimpleNamespace(url="http://bench"),
        attempt=attempt,
        dream=lambda: dreamed.append(1) or "dreamt",
        is_done=lambda *run: False,
        state=None,
    )
    bench.run_all = lambda runs: control.Bench.run_all(bench, runs)
    bench.missing = lambda *a, **k: control.Bench.missing(bench, *a, **k)
    control.Bench.run_suite(bench)
    return ran, dreamed


def test_sigterm_ends_the_suite_after_the_run_in_progress(stop):
    ran, dreamed = suite(stop, kill_after=2)

    first = SCENARIOS[0].name
    assert ran == [(first, "ggs", 1), (first, "retry", 1)]
    assert dreamed == []
    assert stop.requested


def test_a_second_sigterm_stops_the_bench_at_once(stop):
    with pytest.raises(SystemExit) as stopped:
        suite(stop, kill_after=1, kills=2)
    assert stopped.value.code == 128 + signal.SIGTERM


def test_without_sigterm_every_run_of_both_passes_and_the_dream_happen(stop):
    ran, dreamed = suite(stop, kill_after=0)

    assert len(ran) == 2 * 2 * 2
    assert dreamed == [1]
    # Who goes first on a scenario (and pays the cold prompt cache) rotates.
    first, second = SCENARIOS[0].name, SCENARIOS[1].name
    assert ran[:4] == [
        (first, "ggs", 1),
        (first, "retry", 1),
        (second, "retry", 1),
        (second, "ggs", 1),
    ]


def test_with_jobs_every_run_happens_once_and_the_dream_between_passes(stop):
    ran, dreamed = suite(stop, kill_after=0, jobs=3)

    assert sorted(ran) == sorted(
        (s.name, strategy, p)
        for p in (1, 2)
        for s in SCENARIOS[:2]
        for strategy in ("ggs", "retry")
    )
    assert [r[2] for r in ran] == [1] * 4 + [2] * 4
    assert dreamed == [1]


def test_with_jobs_sigterm_starts_no_more_runs(stop):
    ran, dreamed = suite(stop, kill_after=1, jobs=2)

    # The run in the other job may have started before the signal was heard.
    assert 1 <= len(ran) <= 2
    assert dreamed == []
    assert stop.requested


def test_the_memory_off_arm_runs_after_pass_2_and_dreams_nothing(stop):
    ran, dreamed = suite(stop, kill_after=0, memory_off=True)

    assert len(ran) == 2 * 2 * 2 + 2 * 2
    assert dreamed == [1]
    assert [r[2] for r in ran[:4]] == [1] * 4
    assert [r[2:] for r in ran[4:8]] == [(2,)] * 4
    assert [r[2:] for r in ran[8:]] == [(2, "off")] * 4
