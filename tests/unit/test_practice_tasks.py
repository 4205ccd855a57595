"""The practice tasks' verifiers accept the right answer and refuse wrong ones.

Each right answer is worked out here by a standard program over the prepared
files, not by the verifier's own code.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools.heldout import HELDOUT
from devtools.practice import PRACTICE
from devtools.tasks import TASKS, prepare_dir

BY_NAME = {t.name: t for t in PRACTICE}


def sh(command: str, cwd: Path) -> str:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_practice_set_shares_no_task_with_the_others():
    others = [*TASKS, *HELDOUT]
    assert not {t.name for t in PRACTICE} & {t.name for t in others}
    assert not {t.prompt for t in PRACTICE} & {t.prompt for t in others}


@pytest.mark.parametrize("task", PRACTICE, ids=lambda t: t.name)
def test_an_untouched_directory_and_an_empty_answer_are_not_a_solution(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    assert not task.verify(tmp_path / task.name, "").ok


ANSWERS = {
    "bash-users": "awk -F: '$7 == \"/bin/bash\"' passwd | wc -l",
    "tree-bytes": "find assets -type f -printf '%s\\n' | awk '{s+=$1} END {print s}'",
    "hidden-files": "find home -maxdepth 1 -type f -name '.*' | wc -l",
    "common-status": "awk '{print $(NF-1)}' access.log | sort | uniq -c | sort -n "
    "| tail -1 | awk '{print $2}'",
    "slowest-host": "sort -k2 -g latency.txt | tail -1 | cut -d' ' -f1",
    "busiest-dir": 'for d in projects/*/; do echo "$(ls $d | wc -l) $(basename $d)"; '
    "done | sort -n | tail -1 | cut -d' ' -f2",
    "time-window": "grep -c ' 10:' cron.log",
    "largest-number": "sort -n numbers.txt | tail -1",
    "todo-count": "cat src/*.py | grep -o TODO | wc -l",
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_answer_a_standard_program_gives_is_accepted(name, prepared):
    task_dir = prepared(name)
    answer = sh(ANSWERS[name], task_dir)
    assert BY_NAME[name].verify(task_dir, f"The answer is {answer}.").ok, answer


def test_the_pinned_question_wants_no(prepared):
    task_dir = prepared("pinned")
    verify = BY_NAME["pinned"].verify
    assert verify(task_dir, "No: requests>=2.31 is a lower bound.").ok
    assert not verify(task_dir, "Yes, requests is pinned.").ok


def test_the_effects_are_checked_on_disk(prepared):
    task_dir = prepared("set-port")
    sh("sed -i 's/^port = 8000/port = 9090/' server.ini", task_dir)
    assert BY_NAME["set-port"].verify(task_dir, "").ok

    task_dir = prepared("sorted-copy")
    sh("sort names.txt > sorted.txt", task_dir)
    assert BY_NAME["sorted-copy"].verify(task_dir, "").ok
    sh("sort -r names.txt > sorted.txt", task_dir)
    assert not BY_NAME["sorted-copy"].verify(task_dir, "").ok

    task_dir = prepared("clean-tmp")
    sh("find cache -type f -name '*.tmp' -delete", task_dir)
    assert BY_NAME["clean-tmp"].verify(task_dir, "").ok
    sh("rm cache/e.tmp.bak", task_dir)
    assert not BY_NAME["clean-tmp"].verify(task_dir, "").ok

    task_dir = prepared("count-file")
    sh("mkdir -p out && wc -l < input.txt > out/count.txt", task_dir)
    assert BY_NAME["count-file"].verify(task_dir, "").ok
