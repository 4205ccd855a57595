"""bench/control.py end to end: a real cluster, the scripted model, two strategies.

The scripted model behaves as a careful model would on two scenarios: R2
plans to read the file the task names when it exists and fails on it
(environmental) when it does not; R4b answers with the file's line count. So
count-lines is solved at once under both strategies (R3 runs ``wc -l`` in
the sandbox and reports what it printed, and derives it again with ``grep
-c``), and impossible ends in a
clean abandon: under GGS after its replans, under single after one round.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench import control
from roles.tools.sandbox import remove_tree
from tests.integration.test_pipeline_llm import _call, judge, plan, text_of
from tests.llm_server import ScriptedLLMServer, Step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def scripted(tasks_dir):
    """Return the scripted model's responders, by role."""
    path_re = re.compile(re.escape(str(tasks_dir)) + r"[\w./-]*")

    def perceive(request):
        raw = json.loads(re.search(r"New input: (\".*\")", text_of(request)).group(1))
        return json.dumps({"task_id": "bench_task", "intent": raw, "constraints": {}})

    def named_file(request):
        found = path_re.findall(text_of(request))
        return next((p for p in found if os.path.isfile(p)), ""), found

    def planner(request):
        if "The task was abandoned" in str(request.messages[0].get("content")):
            return json.dumps(
                {"accomplished": "nothing", "next_moves": ["Ask for the file"]}
            )
        path, found = named_file(request)
        if path:
            return plan(f"ok-step count the lines of {path}")
        return plan(f"env-step print {found[0] if found else 'the file'}")

    def executor(request):
        done = [m for m in request.messages if m.get("role") == "tool"]
        if done:
            printed = str(done[-1].get("content")).split()[-1]
            return json.dumps({"status": "completed", "output": f"{printed} lines"})
        path, found = named_file(request)
        target = path or (found[0] if found else "missing.txt")
        # Asked to derive the count again by other means, it counts with grep.
        again = "An earlier derivation used" in text_of(request)
        command = f"grep -c '' {target}" if again else f"wc -l < {target}"
        return Step(tool_calls=(_call("shell", {"command": command}),))

    def validator(request):
        reply = {"verdict": "accept", "summary": "counted", "merged_output": ""}
        return json.dumps({**reply, "criteria_results": [], "gap_summary": ""})

    roles = ("R1", "R2", "R3", "R4a", "R4b")
    return dict(
        zip(roles, (perceive, planner, executor, judge, validator), strict=True)
    )


def scripted_bench(tmp_path, tasks_dir, *args: str) -> dict:
    """Run bench/control.py with ``args`` on the scripted model; return its record."""
    with ScriptedLLMServer() as server:
        for role, respond in scripted(tasks_dir).items():
            server.responder(respond, role=role)
        opts = control.parse_args(
            [
                *("--base-url", server.env()["OPENAI_BASE_URL"], "--model", "scripted"),
                *("--data-dir", str(tmp_path), "--tasks-dir", str(tasks_dir)),
                *args,
            ]
        )
        return control.run_bench(opts, control.endpoint_env(opts), "scripted")


@pytest.fixture
def tasks_dir():
    # Under /var/tmp, not pytest's 0700 tmp: the sandbox's uid walks into it.
    path = Path(f"/var/tmp/artoo-bench-control-test-{os.getpid()}")
    yield path
    remove_tree(path)


def test_two_scenarios_under_two_strategies_over_two_passes_two_at_once(
    tmp_path, tasks_dir
):
    record = scripted_bench(
        tmp_path,
        tasks_dir,
        *("--only", "count-lines,impossible", "--strategies", "ggs,single"),
        *("--passes", "2", "--jobs", "2"),
    )

    results = {
        (r["strategy"], r["scenario"], r["pass_no"]): r for r in record["results"]
    }
    assert len(results) == 8
    for (strategy, scenario, _), r in results.items():
        assert r["solved"] and not r["false_accept"], (strategy, scenario, r)
        assert re.fullmatch(r"[0-9a-f-]{36}", r["run_id"])
        assert r["prompt_tokens"] + r["completion_tokens"] > 0
    assert results[("single", "impossible", 1)]["rounds"] == 1
    assert results[("ggs", "impossible", 1)]["rounds"] > 1
    assert {r["directive"] for k, r in results.items() if k[1] == "impossible"} == {
        "abandon"
    }
    ggs = next(
        s for s in record["summaries"] if (s["strategy"], s["pass"]) == ("ggs", 1)
    )
    assert (ggs["solved"], ggs["abandons_correct"], ggs["abandons_premature"]) == (
        2,
        1,
        0,
    )
    assert record["complete"] and len(record["dreams"]) == 1
    assert record["jobs"] == 2
    assert {m["group"] for m in record["memory"]} == {"first-time", "impossible"}

    out = tmp_path / "results" / record["session"]
    report = (out / "control.md").read_text()
    for strategy in ("ggs", "single"):
        assert f"## {strategy}: model cost per role" in report
        costs = record["role_costs"][strategy].splitlines()
        assert {row.split("|")[1].strip() for row in costs[2:]} >= {"R1", "R2", "all"}
    for r in record["results"]:
        assert r["run_id"] in report
    ET.fromstring((out / "control.svg").read_text())
    assert (
        json.loads((out / "control.json").read_text())["session"] == record["session"]
    )
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        stored = db.execute("SELECT session FROM artoo_web_benchmark").fetchall()
        runs = db.execute("SELECT control, count(*) FROM artoo_web_run GROUP BY 1")
        assert dict(runs.fetchall()) == {"ggs": 4, "single": 4}
    assert stored == [(record["session"],)]


def test_the_memory_off_arm_runs_pass_2_under_users_that_remember_nothing(
    tmp_path, tasks_dir
):
    # One account: the strategy's runs over memory share one user; the arm's
    # run still has a user of its own.
    record = scripted_bench(
        tmp_path,
        tasks_dir,
        *("--only", "count-lines", "--strategies", "ggs", "--passes", "2"),
        *("--memory-off", "--one-account"),
    )

    assert record["complete"] and record["memory_off"]
    results = {(r["pass_no"], r["memory"]): r for r in record["results"]}
    assert sorted(results) == [(1, True), (2, False), (2, True)]
    run_of = {k: r["run_id"].replace("-", "") for k, r in results.items()}
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        owners = dict(
            db.execute(
                "SELECT r.id, u.username FROM artoo_web_run r"
                " JOIN auth_user u ON u.id = r.owner_id"
            ).fetchall()
        )
        asked = dict(
            db.execute(
                "SELECT run_id, data FROM artoo_web_traceevent"
                " WHERE role = 'R1' AND kind = 'llm_call'"
            ).fetchall()
        )
    owner = {k: owners[run] for k, run in run_of.items()}
    assert owner[(1, True)] == owner[(2, True)] != owner[(2, False)]
    assert owner[(1, True)].endswith("-ggs-one-account")
    assert owner[(2, False)].endswith("-ggs-count-lines-memory-off")

    def r1_saw(key) -> str:
        return json.loads(asked[run_of[key]])["messages"][-1]["content"]

    assert "Recent session history:" in r1_saw((2, True))
    assert "Recent session history:" not in r1_saw((2, False))
    assert record["without_memory"] == [
        {"strategy": "ggs", "runs": 1, "solved": [1, 1], "worse": [], "better": []}
    ]
    report = (tmp_path / "results" / record["session"] / "control.md").read_text()
    assert "## Pass 2 with memory against no memory" in report
    assert "- ggs: solved 1/1 with memory, 1/1 without" in report
    assert "## ggs, pass 2, memory off" in report
    assert "- accounts: one per strategy, its scenarios in a row" in report
    # Pass 2's own figures hold only the runs over memory.
    pass_2 = [s for s in record["summaries"] if s["pass"] == 2]
    assert [s["scenarios"] for s in pass_2] == [1]
