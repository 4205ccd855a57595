"""The second held-out set's verifiers accept the right answer and refuse wrong ones.

As for the first set, each right answer is worked out here by a standard
program over the prepared files (not by the verifier's own code), and each
task's trap (another unit, the heaviest single row, a flag switched off) is
checked to be in the data and to be refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.heldout import HELDOUT
from devtools.heldout_b import HELDOUT_B, SUPPLIERS
from devtools.practice import PRACTICE
from devtools.tasks import TASKS, prepare_dir
from tests.unit.test_heldout_tasks import sh

BY_NAME = {t.name: t for t in HELDOUT_B}
OLDEST = 'drafts/"$(ls -tr drafts | head -1)"'


def verify(name: str, task_dir: Path, text: str) -> bool:
    return BY_NAME[name].verify(task_dir, text).ok


def test_the_second_held_out_set_is_six_questions_shared_with_no_other_set():
    others = [*TASKS, *PRACTICE, *HELDOUT]
    assert len(HELDOUT_B) == 6
    assert {t.kind for t in HELDOUT_B} == {"answer"}
    assert not {t.name for t in HELDOUT_B} & {t.name for t in others}
    assert not {t.prompt for t in HELDOUT_B} & {t.prompt for t in others}


@pytest.mark.parametrize("task", HELDOUT_B, ids=lambda t: t.name)
def test_an_untouched_directory_and_an_empty_answer_are_not_a_solution(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    assert not task.verify(tmp_path / task.name, "").ok


ANSWERS = {
    "oldest-draft-words": f"wc -w < {OLDEST}",
    "top-supplier": "awk -F';' 'NR>1 {t[$2]+=$4} END {for (s in t) print t[s], s}' "
    "inbound/deliveries.csv | sort -n | tail -1 | cut -d' ' -f2",
    "rainfall-entries": "grep -v -e '^#' -e '^[[:space:]]*$' weather/rainfall.tsv "
    "| tail -n +2 | wc -l",
    "backup-minutes": "f=$(head -1 nightly/backup.log | cut -c1-16); "
    "l=$(tail -1 nightly/backup.log | cut -c1-16); "
    'echo $(( ($(date -ud "$l" +%s) - $(date -ud "$f" +%s)) / 60 ))',
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_answer_a_standard_program_gives_is_accepted(name, prepared):
    task_dir = prepared(name)
    answer = sh(ANSWERS[name], task_dir)
    assert verify(name, task_dir, f"The answer is {answer}."), answer
    if answer.isdigit():
        assert not verify(name, task_dir, f"The answer is {int(answer) + 1}.")


def test_the_oldest_draft_wants_words_not_bytes_or_lines(prepared):
    task_dir = prepared("oldest-draft-words")
    words, lines, size = (
        sh(f"wc -{unit} < {OLDEST}", task_dir) for unit in ("w", "l", "c")
    )
    assert len({words, lines, size}) == 3
    first_by_name = sh("ls drafts | head -1", task_dir)
    assert first_by_name != sh("ls -tr drafts | head -1", task_dir)
    assert verify("oldest-draft-words", task_dir, f"It has {words} words.")
    assert not verify("oldest-draft-words", task_dir, f"It is {size} bytes.")
    assert not verify("oldest-draft-words", task_dir, f"It has {lines} lines.")
    both = f"It has {words} words in {lines} lines."
    assert not verify("oldest-draft-words", task_dir, both)


def test_the_digest_setting_is_present_and_off_so_the_answer_is_no(prepared):
    task_dir = prepared("digest-flag")
    env = (task_dir / "deploy" / "staging.env").read_text()
    assert "NOTIFY_EMAIL_DIGEST=0" in env.splitlines()
    assert "NOTIFY_PUSH_DIGEST=1" in env.splitlines()
    assert verify("digest-flag", task_dir, "No, NOTIFY_EMAIL_DIGEST is set to 0.")
    assert verify("digest-flag", task_dir, "They aren't: the digest is disabled.")
    assert not verify("digest-flag", task_dir, "Yes, email digests are enabled.")
    assert not verify("digest-flag", task_dir, "Email digests are switched on.")


def test_the_heaviest_single_delivery_is_not_the_heaviest_supplier(prepared):
    task_dir = prepared("top-supplier")
    best = sh(ANSWERS["top-supplier"], task_dir)
    heaviest_row = sh(
        "tail -n +2 inbound/deliveries.csv | sort -t';' -k4 -n | tail -1 "
        "| cut -d';' -f2",
        task_dir,
    )
    assert heaviest_row != best
    assert not verify("top-supplier", task_dir, f"It is {heaviest_row}.")
    assert not verify("top-supplier", task_dir, f"Either {best} or {heaviest_row}.")
    other = next(s for s in SUPPLIERS if s not in (best, heaviest_row))
    assert not verify("top-supplier", task_dir, f"{best} and {other} tie.")


def test_the_rainfall_count_leaves_out_header_comments_and_blanks(prepared):
    task_dir = prepared("rainfall-entries")
    records = int(sh(ANSWERS["rainfall-entries"], task_dir))
    total = int(sh("wc -l < weather/rainfall.tsv", task_dir))
    assert sh("grep -c '^#' weather/rainfall.tsv", task_dir) != "0"
    assert sh("grep -c '^$' weather/rainfall.tsv", task_dir) != "0"
    assert not verify("rainfall-entries", task_dir, f"It has {total} lines.")
    assert not verify("rainfall-entries", task_dir, f"{records + 1} entries.")
    both = f"{total} lines, of which {records} are entries."
    assert not verify("rainfall-entries", task_dir, both)


def test_the_backup_span_crosses_midnight_and_is_not_in_the_log(prepared):
    task_dir = prepared("backup-minutes")
    minutes = int(sh(ANSWERS["backup-minutes"], task_dir))
    assert str(minutes) not in sh("cat nightly/backup.log", task_dir).split()
    assert sh("head -1 nightly/backup.log | cut -c1-10", task_dir) != sh(
        "tail -1 nightly/backup.log | cut -c1-10", task_dir
    )
    assert verify("backup-minutes", task_dir, f"About {minutes} minutes.")
    hours = f"{minutes // 60} h {minutes % 60} min ({minutes} minutes)"
    assert verify("backup-minutes", task_dir, hours)
    assert not verify("backup-minutes", task_dir, f"{1440 - minutes} minutes.")


def test_the_offsite_spending_is_a_little_over_budget(prepared):
    task_dir = prepared("offsite-budget")
    total = float(sh("jq -s 'map(.eur) | add' offsite/expenses.jsonl", task_dir))
    assert 4500 < total < 4500 * 1.01
    assert verify("offsite-budget", task_dir, f"Yes: {total:.2f} EUR was spent.")
    assert verify("offsite-budget", task_dir, "The spending exceeded it.")
    assert not verify("offsite-budget", task_dir, "No, it stayed within 4,500.")
    assert not verify("offsite-budget", task_dir, f"It came to {total:.2f} EUR.")
