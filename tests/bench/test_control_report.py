"""The control bench's tables and chart, from recorded results."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from artoo_web.charts import benchmark_chart
from bench.control_report import Result, build_record, render

SVG = "{http://www.w3.org/2000/svg}"


def result(scenario, expect, group, strategy, pass_no=1, **kw) -> Result:
    failure = group if expect == "recoverable" else "none"
    run_id = f"{strategy}-{scenario}-{pass_no}"
    return Result(scenario, expect, failure, group, strategy, pass_no, run_id, **kw)


def recorded() -> list[Result]:
    """GGS solves two recoverable scenarios of two; retry one, with a false accept."""
    return [
        result("count", "first-time", "first-time", "ggs", solved=True,
               directive="accept", rounds=1, prompt_tokens=900, completion_tokens=100,
               wall_s=10),
        result("moved", "recoverable", "environmental", "ggs", solved=True,
               directive="accept", rounds=2, prompt_tokens=1800, completion_tokens=200,
               wall_s=30),
        result("wc", "recoverable", "logical", "ggs", solved=True, directive="accept",
               rounds=3, prompt_tokens=2700, completion_tokens=300, wall_s=50),
        result("none", "impossible", "impossible", "ggs", solved=True,
               directive="abandon", rounds=2, prompt_tokens=1500, completion_tokens=500,
               wall_s=30),
        result("count", "first-time", "first-time", "retry", solved=True,
               directive="accept", rounds=1, prompt_tokens=900, completion_tokens=100,
               wall_s=10),
        result("moved", "recoverable", "environmental", "retry", directive="abandon",
               rounds=4, prompt_tokens=3500, completion_tokens=500, wall_s=60),
        result("wc", "recoverable", "logical", "retry", false_accept=True,
               directive="accept", rounds=1, prompt_tokens=900, completion_tokens=100,
               wall_s=10),
        result("none", "impossible", "impossible", "retry", directive="abandon",
               rounds=4, prompt_tokens=3000, completion_tokens=1000, wall_s=40),
    ]  # fmt: skip


def test_summaries_count_solves_false_accepts_rounds_and_cost_per_solved_task():
    record = build_record({"name": "control", "session": "s"}, recorded())
    ggs, retry = record["summaries"]

    assert (ggs["strategy"], ggs["solved"], ggs["scenarios"]) == ("ggs", 4, 4)
    assert (ggs["recoverable_solved"], ggs["recoverable"]) == (2, 2)
    assert ggs["mean_rounds"] == 2
    assert ggs["tokens_per_solved"] == 8000 / 4
    assert ggs["wall_per_solved_s"] == 120 / 4
    assert (ggs["abandons_correct"], ggs["abandons_premature"]) == (1, 0)
    assert (retry["solved"], retry["recoverable_solved"], retry["false_accepts"]) == (
        1,
        0,
        1,
    )
    assert retry["tokens_per_solved"] == 10000
    assert retry["recoverable_tokens_per_solved"] is None
    # The retry run that abandoned an impossible task was no solve: no NextMoves.
    assert (retry["abandons_correct"], retry["abandons_premature"]) == (1, 1)


def test_comparison_line_gives_the_solve_rate_gap_on_recoverable_scenarios():
    record = build_record({"name": "control", "session": "s"}, recorded())

    assert record["comparison"] == [
        "GGS vs retry on recoverable scenarios (pass 1): solved 2/2 (100 %) vs "
        "0/2 (0 %), +100 pp; tokens per solved task 2,500 vs n/a; false accepts "
        "0 vs 1."
    ]


def test_ggs_is_compared_with_warming_too_when_it_ran():
    warming = [
        Result(**{**r.__dict__, "strategy": "warming"})
        for r in recorded()
        if r.strategy == "retry"
    ]
    record = build_record({"name": "control", "session": "s"}, recorded() + warming)

    assert [line.split(" on ")[0] for line in record["comparison"]] == [
        "GGS vs retry",
        "GGS vs warming",
    ]
    assert "0/2 (0 %), +100 pp" in record["comparison"][1]


def test_second_pass_is_compared_with_the_first_per_strategy_and_class():
    first = recorded()
    second = [
        Result(**{**r.__dict__, "pass_no": 2, "rounds": 1, "prompt_tokens": 450})
        for r in first
    ]
    record = build_record({"name": "control", "session": "s"}, first + second)
    rows = {(m["strategy"], m["group"]): m for m in record["memory"]}

    assert len(record["summaries"]) == 4
    assert rows[("ggs", "logical")]["rounds"] == [3, 1]
    assert rows[("ggs", "logical")]["tokens"] == [3000, 750]
    assert rows[("retry", "environmental")]["solved"] == [0, 0]
    assert "| ggs | logical | 1 | 1 → 1 | 3.00 → 1.00 | -67 % |" in render(record)


def test_second_pass_compares_only_the_scenarios_run_in_both_passes():
    # A session still running: retry's second pass has only reached "count".
    first = recorded()
    second = [
        Result(**{**r.__dict__, "pass_no": 2, "rounds": 1, "prompt_tokens": 450})
        for r in first
        if r.strategy == "ggs" or r.scenario == "count"
    ]
    record = build_record({"name": "control", "session": "s"}, first + second)
    rows = {(m["strategy"], m["group"]): m for m in record["memory"]}

    assert rows[("retry", "first-time")]["runs"] == 1
    assert ("retry", "environmental") not in rows
    assert ("retry", "logical") not in rows
    assert rows[("ggs", "environmental")]["rounds"] == [2, 1]
    # Retry has no recoverable scenario in pass 2 yet: no GGS-against-retry line.
    assert [line[:40] for line in record["comparison"]] == [
        "GGS vs retry on recoverable scenarios (p"
    ]


def test_second_pass_reports_the_scenarios_a_strategy_failed_in_the_first():
    first = recorded()
    # Retry's "moved" (failed in pass 1) is solved in one round the second time;
    # its "wc" was a false accept, not a solve, and fails again.
    second = [Result(**{**r.__dict__, "pass_no": 2}) for r in first]
    for r in second:
        if (r.strategy, r.scenario) == ("retry", "moved"):
            r.solved, r.rounds, r.prompt_tokens, r.completion_tokens = True, 1, 900, 100
    record = build_record({"name": "control", "session": "s"}, first + second)
    rows = {(m["strategy"], m["group"]): m for m in record["memory"]}
    failed = rows[("retry", "failed in pass 1")]

    assert failed["runs"] == 2
    assert failed["solved"] == [0, 1]
    assert failed["rounds"] == [2.5, 1]
    assert ("ggs", "failed in pass 1") not in rows
    # The impossible scenario retry abandoned is no failure to learn from.
    assert ("retry", "impossible") in rows
    report = render(record)
    assert "| retry | failed in pass 1 | 2 | 0 → 1 | 2.50 → 1.00 | -60 % |" in report
    assert "over the scenarios run in both" in report


def test_a_scenario_solved_in_pass_1_and_failed_later_is_a_regression_with_its_recall():
    first = recorded()
    second = [
        Result(**{**r.__dict__, "pass_no": 2, "run_id": r.run_id[:-1] + "2"})
        for r in first
    ]
    for r in second:
        if (r.strategy, r.scenario) == ("ggs", "wc"):
            r.solved, r.directive = False, "abandon"
            r.recalled = ["C success 1f2e3d4c", "Avoid shell wc -l notes.txt"]
        if (r.strategy, r.scenario) == ("retry", "moved"):
            r.solved = True  # failed in pass 1: a gain, not a regression
    record = build_record({"name": "control", "session": "s"}, first + second)

    assert record["regressions"] == [
        {
            "strategy": "ggs",
            "scenario": "wc",
            "pass": 2,
            "runs": ["ggs-wc-1", "ggs-wc-2"],
            "recalled": ["C success 1f2e3d4c", "Avoid shell wc -l notes.txt"],
        }
    ]
    report = render({**record, "operator": "a careful operator"})
    assert (
        "- ggs: wc solved in pass 1 (ggs-wc-1), failed in pass 2 (ggs-wc-2); "
        "recalled before it: C success 1f2e3d4c; Avoid shell wc -l notes.txt"
    ) in report
    assert "- retry: none" in report
    assert "- the operator: a careful operator" in report


def test_a_one_pass_session_reports_no_regressions_section():
    report = render(build_record({"name": "control", "session": "s"}, recorded()))
    assert "Regressions" not in report


def test_report_names_every_run_and_marks_false_accepts():
    report = render(build_record({"name": "control", "session": "s"}, recorded()))

    for r in recorded():
        assert r.run_id in report
    assert "| wc | recoverable | logical | no | **YES** | accept |" in report
    assert "| ggs | 1 | 4/4 | 2/2 (100 %) | 0 | 2.00 | 2,000 | 30 | 1 | 0 |" in report


def test_chart_draws_a_bar_per_strategy_and_pass_with_its_value():
    record = build_record({"name": "control", "session": "s"}, recorded())
    svg = ET.fromstring(str(benchmark_chart(record["chart"])))
    bars = {
        r.find(f"{SVG}title").text: float(r.get("height"))
        for r in svg.iter(f"{SVG}rect")
    }

    assert set(bars) == {
        "ggs pass 1: 100%",
        "retry pass 1: 0%",
        "ggs pass 1: 2,000",
        "retry pass 1: 10,000",
    }
    assert bars["retry pass 1: 0%"] == 0
    assert bars["ggs pass 1: 2,000"] < bars["retry pass 1: 10,000"]
    assert "retry pass 1" in svg.find(f"{SVG}desc").text


def test_chart_escapes_text_and_draws_nothing_solved_as_n_a():
    rows = [
        {"strategy": "<b>x</b>", "pass": 1, "solve_rate": 0, "tokens_per_solved": None}
    ]
    svg = str(benchmark_chart(rows))

    assert "<b>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    assert "n/a" in ET.fromstring(svg).find(f"{SVG}desc").text


def test_report_names_the_machines_of_a_session_that_moved():
    one = render(build_record({"name": "control", "session": "s"}, recorded()))
    assert "runs on" not in one and "wall times compare" not in one

    moved = recorded()
    for r in moved[4:]:
        r.machine = "AMD EPYC, 2 cores, boot 810fbd87"
    report = render(build_record({"name": "control", "session": "s"}, moved))

    assert "- 4 runs on a machine the session did not record" in report
    assert "- 4 runs on AMD EPYC, 2 cores, boot 810fbd87" in report
    assert "- wall times compare only between runs on one machine" in report


def test_differing_verdicts_are_traced_to_a_decision_or_to_the_first_round():
    runs = recorded()
    # moved and none: GGS solved, retry did not, from the same first round; wc:
    # they differ from the first round on. count: the verdicts agree.
    first = {r.run_id: "same" for r in runs}
    first["retry-wc-1"] = "other"
    report = render(
        {
            **build_record({"name": "control", "session": "s"}, runs),
            "first_rounds": first,
        }
    )

    section = report.split("## Were the first rounds alike?", 1)[1]
    assert (
        "Of 3 scenarios (per pass) whose verdicts differ between strategies, 2 "
        in section
    )
    assert (
        "- pass 1 moved (ggs yes, retry no): same first round: a control decision "
        "made the difference" in section
    )
    assert (
        "- pass 1 wc (ggs yes, retry no): first rounds differ: the executor's "
        "replies diverged before any control decision" in section
    )
    assert "- pass 1 none (ggs yes, retry no): same first round" in section
    assert "pass 1 count" not in section
    # Without the transcripts (no database), the section is left out.
    plain = render(build_record({"name": "control", "session": "s"}, runs))
    assert "first rounds alike" not in plain


def test_a_session_with_held_out_scenarios_reports_each_suite_apart():
    tuning = recorded()
    # The held-out set: two recoverable scenarios, which neither strategy solved.
    held_out = [
        Result(
            **{
                **r.__dict__,
                "scenario": f"new-{r.scenario}",
                "run_id": f"new-{r.run_id}",
                "solved": False,
                "suite": "held-out",
            }
        )
        for r in tuning
        if r.expect == "recoverable"
    ]
    meta = {"name": "control", "session": "s"}
    record = build_record(meta, tuning + held_out)
    report = render(record)
    tuning_part, held_part = report.split("## Held-out set (never tuned on)", 1)
    held_tables, runs_part = held_part.split("## ggs, pass 1", 1)

    assert (
        record["suites"]["tuning"]["summaries"]
        == build_record(meta, tuning)["summaries"]
    )
    assert [s["solved"] for s in record["summaries"]] == [4, 1]  # the whole session
    assert "## Tuning set: 4 scenarios" in tuning_part
    ggs_row = "| ggs | 1 | 4/4 | 2/2 (100 %) | 0 | 2.00 | 2,000 | 30 | 1 | 0 |"
    assert ggs_row in tuning_part
    assert held_tables.startswith(": 2 scenarios")
    ggs_row = "| ggs | 1 | 0/2 | 0/2 (0 %) | 0 | 2.50 | n/a | n/a | 0 | 0 |"
    assert ggs_row in held_tables
    assert "solved 0/2 (0 %) vs 0/2 (0 %), +0 pp" in held_tables
    assert "## ggs, pass 1, held-out set (never tuned on)" in report
    held_runs = runs_part.split("## ggs, pass 1, held-out set (never tuned on)")[1]
    held_runs = held_runs.split("## retry")[0]
    assert "| new-moved |" in held_runs and "| count |" not in held_runs


def test_a_session_of_the_tuning_set_alone_reads_as_before():
    record = build_record({"name": "control", "session": "s"}, recorded())
    report = render(record)
    old = {k: v for k, v in record["results"][0].items() if k != "suite"}

    assert "Tuning set" not in report and "held-out" not in report
    assert "\n## ggs, pass 1\n" in report
    assert Result.from_dict(old).suite == "tuning"


def test_pass_2_without_memory_is_set_against_pass_2_with_it():
    first = recorded()
    second = [
        Result(**{**r.__dict__, "pass_no": 2, "run_id": r.run_id[:-1] + "2"})
        for r in first
    ]
    off = {"memory": False}
    bare = [
        Result(**{**r.__dict__, "pass_no": 2, "run_id": f"{r.run_id}x"} | off)
        for r in first
    ]
    for r in second:
        if (r.strategy, r.scenario) == ("ggs", "wc"):
            r.solved, r.recalled = False, ["Avoid shell wc -l notes.txt"]
    for r in bare:
        if (r.strategy, r.scenario) == ("retry", "moved"):
            r.solved = False  # failed without memory too: no change
        if (r.strategy, r.scenario) == ("retry", "wc"):
            r.solved = False
    for r in second:
        if (r.strategy, r.scenario) == ("retry", "wc"):
            r.solved = True  # memory helped
    record = build_record({"name": "control", "session": "s"}, first + second + bare)

    ggs, retry = record["without_memory"]
    assert ggs["solved"] == [3, 4] and ggs["runs"] == 4
    assert ggs["worse"] == [
        {
            "scenario": "wc",
            "runs": ["ggs-wc-1x", "ggs-wc-2"],
            "recalled": ["Avoid shell wc -l notes.txt"],
        }
    ]
    assert [b["scenario"] for b in retry["better"]] == ["wc"] and not retry["worse"]
    # The arm is not a pass of its own: pass 2's figures and regressions are
    # those of the runs over memory.
    assert [s["scenarios"] for s in record["summaries"] if s["pass"] == 2] == [4, 4]
    assert [f["runs"][1] for f in record["regressions"]] == ["ggs-wc-2"]
    report = render(record)
    assert "- ggs: solved 3/4 with memory, 4/4 without" in report
    assert (
        "  - worse with memory: wc (without ggs-wc-1x, with ggs-wc-2); "
        "recalled: Avoid shell wc -l notes.txt"
    ) in report
    assert "  - better with memory: wc (without retry-wc-1x, with retry-wc-2)" in report
    assert report.index("## ggs, pass 2\n") < report.index("## ggs, pass 2, memory off")
    assert "- ggs p2 memory off count:" in report


def test_a_session_without_the_arm_has_no_memory_off_section():
    report = render(build_record({"name": "control", "session": "s"}, recorded()))
    assert "memory off" not in report and "no memory" not in report
