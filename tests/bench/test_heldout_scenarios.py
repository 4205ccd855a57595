"""The held-out set: new scenarios whose verifiers tell a right answer from a wrong one.

Each scenario is prepared in a real directory as the bench prepares it. The
right answer is worked out here by standard programs over the prepared files
(not by the verifier's own code), the wrong ones are what a slip or the
obvious approach gives, and the traps are checked as a command meets them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import control
from bench.control_state import SessionState
from bench.heldout_scenarios import HELDOUT_QUICK
from bench.scenarios import HELDOUT, QUICK, SCENARIOS, select
from devtools import heldout
from devtools.tasks import TASKS, is_false_accept, is_solved, prepare_dir

BY_NAME = {s.name: s for s in HELDOUT}
IMPOSSIBLE = sorted(s.name for s in HELDOUT if s.expect == "impossible")
# comm over the two files' keys; {} takes -23 (only in en), -13 or -12.
KEYS = (
    "comm {} <(grep -o '\"[a-z_]*\":' en.json | sort) "
    "<(grep -o '\"[a-z_]*\":' de.json | sort) | tr -d '\":'"
)
SALES_NORTH = "python3 bin/tally north | cut -d' ' -f2"
# scenario → (a standard program's right answer, programs giving wrong ones)
ANSWERS = {
    "nested-json": (
        "grep -A2 '\"payments\"' gateway.json | grep -o '[0-9]*' | tail -1",
        ["grep -A1 '\"defaults\"' gateway.json | grep -o '[0-9]*'"],
    ),
    "missing-keys": (
        KEYS.format("-23") + " | paste -sd,",
        [
            KEYS.format("-13"),
            "echo $(" + KEYS.format("-23") + " | paste -sd,),"
            "$(" + KEYS.format("-12") + " | head -1)",
        ],
    ),
    "file-checksum": (
        "sha256sum dist/release.bin | cut -d' ' -f1",
        [
            "sha256sum dist/release-old.bin | cut -d' ' -f1",
            "md5sum dist/release.bin | cut -d' ' -f1",
        ],
    ),
    "executable-files": (
        "find tools -type f -perm -u+x -printf '%f\\n' | sort | paste -sd,",
        ["ls tools | grep -E '\\.(sh|py)$' | paste -sd,"],
    ),
    "duplicate-lines": (
        "sort allowlist.txt | uniq -d | paste -sd,",
        ["sort allowlist.txt | uniq -c | sort -rn | head -1 | awk '{print $2}'"],
    ),
    "gzipped-input": (
        "zcat metrics.csv.gz | tail -n +2 | cut -d, -f3 | sort -n "
        "| awk '{a[NR] = $1} END {print a[(NR + 1) / 2]}'",
        ["zcat metrics.csv.gz | awk -F, 'NR > 1 {s += $3; n++} END {print s / n}'"],
    ),
    "packed-file": (
        "tar -xzOf app-bundle.tar.gz app/package.json | grep '\"version\"' "
        "| cut -d'\"' -f4",
        [
            "tar -xzOf app-bundle.tar.gz app/package.json | grep express "
            "| cut -d'\"' -f4"
        ],
    ),
    "bad-interpreter": (
        SALES_NORTH,
        [
            "python3 bin/tally south | cut -d' ' -f2",
            "awk -F, 'NR > 1 {s += $2} END {print s}' sales.csv",
        ],
    ),
    "version-order": (
        "sort -V releases.txt | tail -1",
        ["sort releases.txt | tail -1"],
    ),
    "latin1-city": (
        "iconv -f latin1 -t utf-8 customers.csv | cut -d, -f3 | grep -cx Zürich",
        ["grep -c Zürich customers.csv || true"],
    ),
    "tz-window": (
        'while read -r stamp rest; do date -u -d "$stamp" +%H; done < requests.log '
        "| grep -c '^09$'",
        ["grep -c 'T09:' requests.log"],
    ),
}
NUMERIC = {
    "nested-json",
    "gzipped-input",
    "bad-interpreter",
    "latin1-city",
    "tz-window",
}


def sh(command: str, cwd: Path, check: bool = True) -> str:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=check
    ).stdout.strip()


@pytest.fixture
def prepared(tmp_path):
    def make(name: str) -> Path:
        task_dir = tmp_path / name
        prepare_dir(BY_NAME[name].task, task_dir)
        return task_dir

    return make


def test_the_held_out_set_is_new_scenarios_covering_every_mark():
    names = [s.name for s in HELDOUT]
    marks = [(s.expect, s.failure) for s in HELDOUT]

    assert len(names) >= 10 and len(set(names)) == len(names)
    assert not set(names) & {s.name for s in SCENARIOS}
    assert not set(names) & {t.name for t in TASKS + heldout.HELDOUT}
    assert {s.suite for s in HELDOUT} == {"held-out"}
    assert marks.count(("first-time", "none")) >= 4
    assert marks.count(("recoverable", "environmental")) >= 2
    assert marks.count(("recoverable", "logical")) >= 2
    assert sum(expect == "impossible" for expect, _ in marks) >= 1
    assert set(ANSWERS) | set(IMPOSSIBLE) == set(names)


def test_both_suites_run_by_default_and_either_can_be_chosen():
    assert select() == SCENARIOS + HELDOUT
    assert select(suite="tuning") == SCENARIOS
    assert select(suite="held-out") == HELDOUT
    assert [s.name for s in select(quick=True)] == [*QUICK, *HELDOUT_QUICK]
    assert [s.name for s in select("lost-history,count-lines")] == [
        "lost-history",
        "count-lines",
    ]
    with pytest.raises(ValueError, match="nested-json in suite tuning"):
        select("nested-json", suite="tuning")
    with pytest.raises(ValueError, match="unknown suite"):
        select(suite="everything")


def test_the_bench_takes_the_suite_from_its_command_line_and_keeps_it(tmp_path):
    data = ["--data-dir", str(tmp_path)]
    opts = control.parse_args(["--suite", "held-out", "--quick", *data])

    assert [s.name for s in opts.scenarios] == list(HELDOUT_QUICK)
    assert control.saved_options(opts)["suite"] == "held-out"
    with pytest.raises(SystemExit):
        control.parse_args(["--suite", "everything", *data])

    # A session saved before the suites existed resumes with its own scenarios.
    options = {**control.saved_options(opts), "only": "count-lines"}
    del options["suite"]
    SessionState.new(tmp_path, "old", options, "scripted")
    resumed = control.parse_args(["--resume", "old", *data])
    assert [s.name for s in resumed.scenarios] == ["count-lines"]
    with pytest.raises(SystemExit):
        control.parse_args(["--resume", "old", "--suite", "tuning", *data])


@pytest.mark.parametrize("scenario", HELDOUT, ids=lambda s: s.name)
def test_an_empty_answer_or_the_request_echoed_is_not_a_solution(scenario, tmp_path):
    task_dir = tmp_path / scenario.name
    prepare_dir(scenario.task, task_dir)
    # As the bench hands a run's answer over: the session's root taken out.
    echoed = scenario.task.request(task_dir).replace(str(tmp_path), "<root>")

    assert not scenario.task.verify(task_dir, "").ok
    assert not scenario.task.verify(task_dir, echoed).ok


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_verifier_accepts_a_standard_programs_answer_and_refuses_wrong_ones(
    name, prepared
):
    task_dir = prepared(name)
    task = BY_NAME[name].task
    right_command, wrong_commands = ANSWERS[name]
    right = sh(right_command, task_dir)
    wrongs = [sh(c, task_dir) for c in wrong_commands]
    if name in NUMERIC:
        wrongs += [str(float(right) + 1), str(float(right) - 1)]

    verdict = task.verify(task_dir, f"The answer is {right}.")
    assert verdict.ok, (right, verdict.note)
    assert is_solved(task, verdict, "accept", False)
    for wrong in wrongs:
        assert wrong != right
        verdict = task.verify(task_dir, f"The answer is {wrong}.")
        assert not verdict.ok, (wrong, verdict.note)
        assert is_false_accept(verdict, "accept")


@pytest.mark.parametrize("name", IMPOSSIBLE)
def test_an_impossible_scenario_is_solved_only_by_an_abandon_with_next_moves(
    name, prepared
):
    task_dir = prepared(name)
    task = BY_NAME[name].task
    verdict = task.verify(task_dir, "The answer is 42.")

    assert not verdict.ok
    assert is_false_accept(verdict, "accept")
    assert is_solved(task, verdict, "abandon", True)
    assert not is_solved(task, verdict, "abandon", False)


# The traps are real --------------------------------------------------------------


def test_the_named_inputs_are_compressed_or_packed_and_their_contents_are_there(
    prepared,
):
    gzipped, packed = prepared("gzipped-input"), prepared("packed-file")

    assert sh("cat metrics.csv", gzipped, check=False) == ""
    assert (
        sh("zcat metrics.csv.gz | head -1", gzipped) == "timestamp,endpoint,latency_ms"
    )
    assert not (packed / "app").exists()
    assert sh("tar -tzf app-bundle.tar.gz", packed).splitlines() == [
        "app/package.json",
        "app/index.js",
        "app/README.md",
    ]


def test_the_script_fails_as_named_and_prints_its_total_through_python(prepared):
    task_dir = prepared("bad-interpreter")

    direct = subprocess.run(
        ["bash", "-c", "./bin/tally north"], cwd=task_dir, capture_output=True
    )

    assert direct.returncode != 0 and direct.stdout == b""
    assert (task_dir / "bin/tally").stat().st_mode & 0o111
    assert sh(SALES_NORTH, task_dir).isdigit()


@pytest.mark.parametrize("name", ["version-order", "latin1-city", "tz-window"])
def test_the_obvious_command_runs_and_gives_another_answer(name, prepared):
    task_dir = prepared(name)
    right_command, (obvious, *_) = ANSWERS[name]

    done = subprocess.run(["bash", "-c", obvious], cwd=task_dir, capture_output=True)
    assert done.stderr == b""
    assert sh(obvious, task_dir) != sh(right_command, task_dir)


def test_the_archive_is_cut_off_and_the_notes_have_no_earlier_copy(prepared):
    archive, notes = prepared("corrupt-archive"), prepared("lost-history")

    listed = subprocess.run(
        ["tar", "-tzf", "export.tar.gz"], cwd=archive, capture_output=True, text=True
    )
    assert listed.returncode != 0 and "export/data.csv" in listed.stdout
    assert sorted(p.name for p in notes.rglob("*")) == ["notes.txt"]
