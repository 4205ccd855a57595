"""The memory=off arm's keys, users and option, without a cluster."""

from __future__ import annotations

import pytest

from bench import control
from bench.control_state import SessionState, key_of, parse_key

OPTIONS = {"strategies": ["ggs"], "only": "count-lines", "passes": 2, "seed": 42}


def test_a_run_of_the_arm_has_a_key_of_its_own_that_reads_back():
    with_memory = key_of("count-lines", "ggs", 2)
    without = key_of("count-lines", "ggs", 2, memory=False)
    assert with_memory == "ggs/count-lines/2" and without != with_memory
    assert parse_key(with_memory) == ("ggs", "count-lines", 2, True)
    assert parse_key(without) == ("ggs", "count-lines", 2, False)


def test_the_arm_has_users_of_its_own_and_a_cut_off_run_a_new_one(tmp_path):
    state = SessionState.new(tmp_path, "s1", OPTIONS, "scripted")
    remembering = state.user("ggs", "count-lines")
    bare = state.user("ggs", "count-lines", memory=False)
    assert bare != remembering and bare.startswith(remembering)
    again = state.new_user("ggs", "count-lines", memory=False)
    assert again == f"{bare}-2"
    assert state.user("ggs", "count-lines", memory=False) == again
    assert state.user("ggs", "count-lines") == remembering


def test_a_finished_run_of_the_arm_leaves_pass_2_over_memory_to_do(tmp_path):
    from bench.control_report import Result

    state = SessionState.new(tmp_path, "s1", OPTIONS, "scripted")
    run = Result("count-lines", "first-time", "none", "first-time", "ggs", 2)
    run.memory = False
    state.finished(run)
    assert state.is_done("count-lines", "ggs", 2, memory=False)
    assert not state.is_done("count-lines", "ggs", 2)


def test_one_account_runs_in_a_row_not_several_at_once(tmp_path, capsys):
    with pytest.raises(SystemExit):
        control.parse_args(
            ["--one-account", "--jobs", "2", "--data-dir", str(tmp_path)]
        )
    assert "in a row" in capsys.readouterr().err


@pytest.mark.parametrize("passes", [[], ["--passes", "1"]])
def test_the_arm_needs_a_second_pass(tmp_path, capsys, passes):
    with pytest.raises(SystemExit):
        control.parse_args(["--memory-off", *passes, "--data-dir", str(tmp_path)])
    assert "--memory-off is an arm of pass 2" in capsys.readouterr().err


def test_the_arm_adds_one_run_per_pair_to_the_session(tmp_path):
    opts = control.parse_args(
        [*("--only", "count-lines", "--strategies", "ggs,retry", "--passes", "2")]
        + ["--memory-off", "--data-dir", str(tmp_path)]
    )
    runs = control.all_runs(opts)
    assert len(runs) == 6
    assert [r for r in runs if not r[3]] == [
        ("count-lines", "ggs", 2, False),
        ("count-lines", "retry", 2, False),
    ]


def test_one_account_gives_a_strategy_one_user_for_every_scenario(tmp_path):
    state = SessionState.new(
        tmp_path, "s2", {**OPTIONS, "one_account": True}, "scripted"
    )
    users = {state.user("ggs", name) for name in ("count-lines", "csv-sum")}
    assert users == {"bench-s2-ggs-one-account"}
    assert state.user("retry", "csv-sum") == "bench-s2-retry-one-account"
    bare = {state.user("ggs", n, memory=False) for n in ("count-lines", "csv-sum")}
    assert len(bare) == 2 and not bare & users


def test_the_report_says_how_the_accounts_were_given(tmp_path):
    from bench.control_report import build_record, render

    for one, said in ((True, "one per strategy"), (False, "one per (strategy")):
        meta = {"name": "control", "session": "s", "one_account": one}
        assert f"- accounts: {said}" in render(build_record(meta, []))
