"""The held-out tasks' verifiers accept the right answer and refuse wrong ones.

Each right answer is worked out here by a standard program over the prepared
files (not by the verifier's own code), so a verifier that reads its data
wrongly fails.
"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from devtools.heldout import HELDOUT
from devtools.tasks import TASKS, prepare_dir

BY_NAME = {t.name: t for t in HELDOUT}


def sh(command: str, cwd: Path) -> str:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_held_out_set_is_new_tasks_of_new_kinds():
    assert len(HELDOUT) >= 10
    assert not {t.name for t in HELDOUT} & {t.name for t in TASKS}
    assert not {t.prompt for t in HELDOUT} & {t.prompt for t in TASKS}


@pytest.mark.parametrize("task", HELDOUT, ids=lambda t: t.name)
def test_an_untouched_directory_and_an_empty_answer_are_not_a_solution(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    assert not task.verify(tmp_path / task.name, "").ok


ANSWERS = {
    "busy-users": "sed 's/.*user=\\([a-z]*\\).*/\\1/' access.log | sort | uniq -c "
    "| awk '$1 > 3 {print $2}' | paste -sd,",
    "empty-files": "find data -type f -empty -printf '%f\\n' | sort | paste -sd,",
    "distinct-ips": "cut -d' ' -f1 web.log | sort -u | wc -l",
    "newest-backup": "ls -t backups | head -1",
    "top-revenue": "awk -F, 'NR>1 {t[$1]+=$2*$3} END {for (p in t) print t[p], p}' "
    "sales.csv | sort -g | tail -1 | cut -d' ' -f2",
    "run-code": "python3 -c 'from util import checksum; print(checksum(\"artoo\"))'",
    "date-span": "d=$(cut -d' ' -f1 events.txt | sort); "
    'echo $(( ($(date -d $(echo "$d" | tail -1) +%s) - '
    '$(date -d $(echo "$d" | head -1) +%s)) / 86400 ))',
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_answer_a_standard_program_gives_is_accepted(name, prepared):
    task_dir = prepared(name)
    answer = sh(ANSWERS[name], task_dir)
    assert BY_NAME[name].verify(task_dir, f"The answer is {answer}.").ok, answer


def test_naming_one_name_too_many_is_refused(prepared):
    task_dir = prepared("busy-users")
    right = sh(ANSWERS["busy-users"], task_dir)
    assert not BY_NAME["busy-users"].verify(task_dir, right + ",alice,bruno,chen").ok


def test_the_debug_question_wants_no(prepared):
    task_dir = prepared("debug-flag")
    verify = BY_NAME["debug-flag"].verify
    assert verify(task_dir, "No: logging.debug is false.").ok
    assert not verify(task_dir, "Yes, debug is enabled.").ok


def test_the_effects_are_checked_on_disk(prepared):
    task_dir = prepared("line-report")
    sh(
        'for f in notes/*.txt; do echo "$(basename $f .txt): $(wc -l < $f)"; '
        "done > report.txt",
        task_dir,
    )
    assert BY_NAME["line-report"].verify(task_dir, "").ok
    sh("sed -i 's/: .*/: 0/' report.txt", task_dir)
    assert not BY_NAME["line-report"].verify(task_dir, "").ok

    task_dir = prepared("edit-config")
    sh("sed -i 's/log_level = info/log_level = debug/' app.conf", task_dir)
    assert BY_NAME["edit-config"].verify(task_dir, "").ok

    task_dir = prepared("rename-photos")
    sh('for f in photos/*.jpeg; do mv "$f" "${f%.jpeg}.jpg"; done', task_dir)
    assert BY_NAME["rename-photos"].verify(task_dir, "").ok

    task_dir = prepared("archive-site")
    sh("tar czf site.tar.gz site", task_dir)
    assert BY_NAME["archive-site"].verify(task_dir, "").ok
    with tarfile.open(task_dir / "site.tar.gz", "w:gz") as archive:
        archive.add(task_dir / "site" / "index.html", "site/index.html")
    assert not BY_NAME["archive-site"].verify(task_dir, "").ok
