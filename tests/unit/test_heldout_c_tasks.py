"""The third held-out set's verifiers accept the right subset and refuse wrong ones.

As for the other held-out sets, each right answer is worked out here by a
standard program over the prepared files (not by the verifier's own code).
The whole listing and its complement are refused for every task, and each
task's near miss (a file of exactly the limit, ``nologin`` outside the shell
field, ``503`` as a byte count, a commented-out key, ``refunds``) is checked
to be in the data and to be refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.heldout import HELDOUT
from devtools.heldout_b import HELDOUT_B
from devtools.heldout_c import HELDOUT_C
from devtools.practice import PRACTICE
from devtools.tasks import TASKS, prepare_dir
from tests.unit.test_heldout_tasks import sh

BY_NAME = {t.name: t for t in HELDOUT_C}

# One name a line, as the standard programs print them.
ANSWERS = {
    "big-exports": "find exports -type f -size +65536c -printf '%f\\n'",
    "nologin-accounts": "awk -F: '$7 == \"/usr/sbin/nologin\" {print $1}' etc/passwd",
    "stuck-scripts": "find tools/bin -type f ! -perm /111 -printf '%f\\n'",
    "empty-settings": "grep -E '^[a-z_]+[[:space:]]*=[[:space:]]*$' "
    "config/service.ini | cut -d= -f1 | tr -d ' '",
    "error-clients": "awk '$9 ~ /^5/ {print $1}' logs/access.log | sort -u",
    "refund-mentions": "grep -rlw refund support | xargs -n1 basename",
}
LISTINGS = {
    "big-exports": "ls exports",
    "nologin-accounts": "cut -d: -f1 etc/passwd",
    "stuck-scripts": "ls tools/bin",
    "empty-settings": "grep -oE '^[a-z_]+' config/service.ini",
    "error-clients": "cut -d' ' -f1 logs/access.log | sort -u",
    "refund-mentions": "find support -type f -printf '%f\\n'",
}


def names(command: str, task_dir: Path) -> set[str]:
    return set(sh(command, task_dir).split())


def verify(name: str, task_dir: Path, chosen: set[str]) -> bool:
    text = f"The answer is {', '.join(sorted(chosen))}."
    return BY_NAME[name].verify(task_dir, text).ok


def test_the_third_held_out_set_is_six_questions_shared_with_no_other_set():
    others = [*TASKS, *PRACTICE, *HELDOUT, *HELDOUT_B]
    assert len(HELDOUT_C) == 6
    assert {t.kind for t in HELDOUT_C} == {"answer"}
    assert set(ANSWERS) == set(LISTINGS) == set(BY_NAME)
    assert not {t.name for t in HELDOUT_C} & {t.name for t in others}
    assert not {t.prompt for t in HELDOUT_C} & {t.prompt for t in others}


@pytest.mark.parametrize("task", HELDOUT_C, ids=lambda t: t.name)
def test_an_untouched_directory_and_an_empty_answer_are_not_a_solution(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    assert not task.verify(tmp_path / task.name, "").ok


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_subset_a_standard_program_gives_is_accepted(name, prepared):
    task_dir = prepared(name)
    answer = sh(ANSWERS[name], task_dir)
    assert verify(name, task_dir, set(answer.split())), answer
    assert BY_NAME[name].verify(task_dir, answer).ok, answer


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_naming_the_whole_listing_is_refused(name, prepared):
    task_dir = prepared(name)
    right, listing = names(ANSWERS[name], task_dir), names(LISTINGS[name], task_dir)
    assert right < listing
    assert not verify(name, task_dir, listing)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_naming_the_complement_is_refused(name, prepared):
    task_dir = prepared(name)
    right, listing = names(ANSWERS[name], task_dir), names(LISTINGS[name], task_dir)
    assert right and listing - right
    assert not verify(name, task_dir, listing - right)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_one_item_too_many_or_too_few_is_refused(name, prepared):
    task_dir = prepared(name)
    right, listing = names(ANSWERS[name], task_dir), names(LISTINGS[name], task_dir)
    assert not verify(name, task_dir, right - {min(right)})
    assert not verify(name, task_dir, right | {min(listing - right)})


def snapshot(task_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(task_dir)): (
            p.read_bytes() if p.is_file() else b"",
            p.stat().st_mode,
        )
        for p in sorted(task_dir.rglob("*"))
    }


@pytest.mark.parametrize("task", HELDOUT_C, ids=lambda t: t.name)
def test_preparing_twice_gives_the_same_files_and_modes(task, tmp_path):
    prepare_dir(task, tmp_path / "first")
    prepare_dir(task, tmp_path / "second")
    assert snapshot(tmp_path / "first") == snapshot(tmp_path / "second")


@pytest.mark.parametrize("task", HELDOUT_C, ids=lambda t: t.name)
def test_every_file_and_directory_is_readable_by_anyone(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    for path in [tmp_path / task.name, *(tmp_path / task.name).rglob("*")]:
        assert path.stat().st_mode & 0o004, path
        if path.is_dir():
            assert path.stat().st_mode & 0o777 == 0o755, path


# The near misses ---------------------------------------------------------------


def test_files_of_exactly_the_limit_or_over_64000_bytes_are_not_larger(prepared):
    task_dir = prepared("big-exports")
    exact = names("find exports -size 65536c -printf '%f\\n'", task_dir)
    thousands = names("find exports -size +64000c -printf '%f\\n'", task_dir)
    right = names(ANSWERS["big-exports"], task_dir)
    assert exact and thousands - right - exact
    assert not verify("big-exports", task_dir, right | exact)
    assert not verify("big-exports", task_dir, thousands)


def test_nologin_outside_the_shell_field_and_the_system_accounts_are_refused(
    prepared,
):
    task_dir = prepared("nologin-accounts")
    right = names(ANSWERS["nologin-accounts"], task_dir)
    grepped = names("grep nologin etc/passwd | cut -d: -f1", task_dir)
    system = names("awk -F: '$3 < 1000 {print $1}' etc/passwd", task_dir)
    false_shell = names(
        "awk -F: '$7 == \"/bin/false\" {print $1}' etc/passwd", task_dir
    )
    assert grepped > right and system != right and false_shell
    for wrong in (grepped, system, right | false_shell):
        assert not verify("nologin-accounts", task_dir, wrong)


def test_scripts_with_a_shebang_and_a_non_executable_mode_are_the_answer(prepared):
    task_dir = prepared("stuck-scripts")
    modes = sh("stat -c %a tools/bin/*", task_dir).split()
    # Writable and read-only files among both kinds, not one mode each.
    assert len(set(modes)) > 3
    assert set(sh("head -qc2 tools/bin/* | fold -w2", task_dir).split()) == {"#!"}
    runnable = names("find tools/bin -type f -perm -111 -printf '%f\\n'", task_dir)
    assert not verify("stuck-scripts", task_dir, runnable)


def test_blank_values_count_and_zero_false_or_commented_out_keys_do_not(prepared):
    task_dir = prepared("empty-settings")
    right = names(ANSWERS["empty-settings"], task_dir)
    bare = names("grep -E '^[a-z_]+ *=$' config/service.ini | cut -d= -f1", task_dir)
    commented = names(
        "grep -oE '^;[a-z_]+ *=' config/service.ini | tr -d ';= '", task_dir
    )
    falsy = names("grep -E '= (0|false)$' config/service.ini | cut -d' ' -f1", task_dir)
    assert bare < right and commented and falsy and not falsy & right
    assert not verify("empty-settings", task_dir, bare)
    assert not verify("empty-settings", task_dir, right | commented)
    assert not verify("empty-settings", task_dir, right | falsy)


def test_a_503_byte_count_or_path_is_not_a_server_error(prepared):
    task_dir = prepared("error-clients")
    right = names(ANSWERS["error-clients"], task_dir)
    grepped = names("grep ' 5[0-9][0-9] ' logs/access.log | cut -d' ' -f1", task_dir)
    client_errors = names("awk '$9 ~ /^4/ {print $1}' logs/access.log", task_dir)
    assert grepped > right and client_errors - right
    assert not verify("error-clients", task_dir, grepped)
    assert not verify("error-clients", task_dir, right | client_errors)


def test_refunds_refunded_and_a_file_name_do_not_hold_the_word(prepared):
    task_dir = prepared("refund-mentions")
    right = names(ANSWERS["refund-mentions"], task_dir)
    substring = names("grep -rl refund support | xargs -n1 basename", task_dir)
    top_level = names("grep -lw refund support/* 2>/dev/null || true", task_dir)
    by_name = names("find support -name '*refund*' -printf '%f\\n'", task_dir)
    assert substring > right and by_name and not by_name & right
    assert {Path(p).name for p in top_level} < right
    assert not verify("refund-mentions", task_dir, substring)
    assert not verify("refund-mentions", task_dir, {Path(p).name for p in top_level})
    assert not verify("refund-mentions", task_dir, right | by_name)
