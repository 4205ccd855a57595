"""The fourth held-out set's verifiers accept the first item by its key and no other.

As for the other held-out sets, each right answer is worked out here by a
standard program over the prepared files (not by the verifier's own code),
and is accepted by name and as a path. For every task the first item by each
other plausible key (the largest, the newest, the first or last by name, the
most lines, the date in a name, a memory read as text or without its unit)
is worked out the same way, checked to be in the data as another item, and
refused, alone and next to the right one; so is the whole listing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.heldout import HELDOUT
from devtools.heldout_b import HELDOUT_B
from devtools.heldout_c import HELDOUT_C
from devtools.heldout_d import HELDOUT_D
from devtools.practice import PRACTICE
from devtools.tasks import TASKS, prepare_dir
from tests.unit.test_heldout_tasks import sh

BY_NAME = {t.name: t for t in HELDOUT_D}
MOST_LINES = "sort -n | tail -1 | awk '{print $2}'"
MEMORY_MIB = (
    'awk \'$1 == "memory:" {print $2 * ($3 == "GiB" ? 1024 : 1), FILENAME}\' '
    "inventory/*/hardware.yaml | sort -n | tail -1 | cut -d' ' -f2"
)

# The answer's path from the task's directory, as the standard programs print it.
PATHS = {
    "stale-scan": "echo scans/$(ls -tr scans | head -1)",
    "disk-hog": "find uploads -type f -printf '%s %p\\n' | sort -n | tail -1 "
    "| cut -d' ' -f2",
    "chattiest-log": f"wc -l logs/*.log | grep -v ' total$' | {MOST_LINES}",
    "tiniest-message": "find spool/outgoing -type f -size +0 -printf '%s %p\\n' "
    "| sort -n | head -1 | cut -d' ' -f2",
    "last-edited-report": "echo reports/$(ls -t reports | head -1)",
    "roomiest-host": MEMORY_MIB,
}
LISTINGS = {
    "stale-scan": "ls scans",
    "disk-hog": "find uploads -type f -printf '%f\\n'",
    "chattiest-log": "ls logs",
    "tiniest-message": "ls spool/outgoing",
    "last-edited-report": "ls reports",
    "roomiest-host": "ls inventory",
}
# The first item by every other key the question could be read with.
DECOYS = {
    "stale-scan": {
        "smallest": "ls -Sr scans | head -1",
        "first by name": "ls scans | head -1",
        "last by name": "ls scans | tail -1",
        "earliest date in the name": "ls scans "
        "| sed -E 's/.*-([0-9]{4}-[0-9]{2}-[0-9]{2})\\.txt$/\\1 &/' | sort "
        "| head -1 | cut -d' ' -f2",
        "newest": "ls -t scans | head -1",
    },
    "disk-hog": {
        "most lines": "find uploads -type f -exec wc -l {} + | grep -v ' total$' "
        f"| {MOST_LINES} | xargs basename",
        "newest": "find uploads -type f -printf '%T@ %f\\n' | sort -n | tail -1 "
        "| cut -d' ' -f2",
        "largest at the top level": "find uploads -maxdepth 1 -type f "
        "-printf '%s %f\\n' | sort -n | tail -1 | cut -d' ' -f2",
        "last by name": "find uploads -type f -printf '%f\\n' | sort | tail -1",
    },
    "chattiest-log": {
        "largest": "ls -S logs | head -1",
        "newest": "ls -t logs | head -1",
        "last by name": "ls logs | tail -1",
    },
    "tiniest-message": {
        "smallest, empty or not": "ls -Sr spool/outgoing | head -1",
        "first by name": "ls spool/outgoing | head -1",
        "first non-empty by name": "find spool/outgoing -type f -size +0 "
        "-printf '%f\\n' | sort | head -1",
        "fewest lines of the non-empty": "find spool/outgoing -type f -size +0 "
        "-exec wc -l {} + | grep -v ' total$' | sort -n | head -1 "
        "| awk '{print $2}' | xargs basename",
        "oldest": "ls -tr spool/outgoing | head -1",
        "last by name": "ls spool/outgoing | tail -1",
    },
    "last-edited-report": {
        "largest": "ls -S reports | head -1",
        "latest month in the name": "ls reports "
        "| sed -E 's/.*-([0-9]{4}-[0-9]{2})\\.md$/\\1 &/' | sort | tail -1 "
        "| cut -d' ' -f2",
        "last by name": "ls reports | tail -1",
        "oldest": "ls -tr reports | head -1",
    },
    "roomiest-host": {
        "memory as text": "grep -H '^memory:' inventory/*/hardware.yaml "
        "| LC_ALL=C sort -t: -k3 | tail -1 | cut -d/ -f2",
        "memory without its unit": "awk '$1 == \"memory:\" {print $2, FILENAME}' "
        "inventory/*/hardware.yaml | sort -n | tail -1 | cut -d/ -f2",
        "largest file": "ls -S inventory/*/hardware.yaml | head -1 | cut -d/ -f2",
        "newest file": "ls -t inventory/*/hardware.yaml | head -1 | cut -d/ -f2",
        "newest directory": "ls -t inventory | head -1",
        "last by name": "ls inventory | tail -1",
    },
}
CASES = [(name, key) for name, keys in DECOYS.items() for key in keys]


def names(command: str, task_dir: Path) -> set[str]:
    return set(sh(command, task_dir).split())


def right(name: str, task_dir: Path) -> str:
    path = Path(sh(PATHS[name], task_dir))
    return path.name if name != "roomiest-host" else path.parent.name


def verify(name: str, task_dir: Path, chosen: set[str]) -> bool:
    text = f"The answer is {', '.join(sorted(chosen))}."
    return BY_NAME[name].verify(task_dir, text).ok


def test_the_fourth_held_out_set_is_six_questions_shared_with_no_other_set():
    others = [*TASKS, *PRACTICE, *HELDOUT, *HELDOUT_B, *HELDOUT_C]
    assert len(HELDOUT_D) == 6
    assert {t.kind for t in HELDOUT_D} == {"answer"}
    assert set(PATHS) == set(LISTINGS) == set(DECOYS) == set(BY_NAME)
    assert not {t.name for t in HELDOUT_D} & {t.name for t in others}
    assert not {t.prompt for t in HELDOUT_D} & {t.prompt for t in others}


@pytest.mark.parametrize("task", HELDOUT_D, ids=lambda t: t.name)
def test_an_untouched_directory_and_an_empty_answer_are_not_a_solution(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    assert not task.verify(tmp_path / task.name, "").ok


@pytest.mark.parametrize("name", sorted(PATHS))
def test_the_item_a_standard_program_gives_is_accepted_by_name_or_path(name, prepared):
    task_dir = prepared(name)
    best, path = right(name, task_dir), sh(PATHS[name], task_dir)
    assert best in names(LISTINGS[name], task_dir)
    assert verify(name, task_dir, {best}), best
    assert BY_NAME[name].verify(task_dir, best).ok, best
    assert BY_NAME[name].verify(task_dir, f"It is {task_dir / path}.").ok, path


@pytest.mark.parametrize("name", sorted(PATHS))
def test_naming_the_whole_listing_is_refused(name, prepared):
    task_dir = prepared(name)
    listing = names(LISTINGS[name], task_dir)
    assert {right(name, task_dir)} < listing
    assert not verify(name, task_dir, listing)


@pytest.mark.parametrize(("name", "key"), CASES, ids=lambda v: v.replace(" ", "-"))
def test_the_first_item_by_another_key_is_another_item_and_refused(name, key, prepared):
    task_dir = prepared(name)
    best, decoy = right(name, task_dir), sh(DECOYS[name][key], task_dir)
    assert decoy in names(LISTINGS[name], task_dir)
    assert decoy != best
    assert not verify(name, task_dir, {decoy})
    assert not verify(name, task_dir, {best, decoy})
    assert not BY_NAME[name].verify(task_dir, f"{best}, or else {decoy}").ok


def snapshot(task_dir: Path) -> dict[str, tuple[bytes, int, float]]:
    return {
        str(p.relative_to(task_dir)): (
            p.read_bytes() if p.is_file() else b"",
            p.stat().st_mode,
            p.stat().st_mtime if p.is_file() else 0.0,
        )
        for p in sorted(task_dir.rglob("*"))
    }


@pytest.mark.parametrize("task", HELDOUT_D, ids=lambda t: t.name)
def test_preparing_twice_gives_the_same_files_modes_and_times(task, tmp_path):
    prepare_dir(task, tmp_path / "first")
    prepare_dir(task, tmp_path / "second")
    assert snapshot(tmp_path / "first") == snapshot(tmp_path / "second")


@pytest.mark.parametrize("task", HELDOUT_D, ids=lambda t: t.name)
def test_every_file_and_directory_is_readable_by_anyone(task, tmp_path):
    prepare_dir(task, tmp_path / task.name)
    for path in [tmp_path / task.name, *(tmp_path / task.name).rglob("*")]:
        assert path.stat().st_mode & 0o004, path
        if path.is_dir():
            assert path.stat().st_mode & 0o777 == 0o755, path


# The traps the keys share no item with ------------------------------------------


def test_every_empty_file_is_refused_alone_and_next_to_the_smallest(prepared):
    task_dir = prepared("tiniest-message")
    best = right("tiniest-message", task_dir)
    empty = names("find spool/outgoing -type f -empty -printf '%f\\n'", task_dir)
    assert len(empty) >= 2 and best not in empty
    assert not verify("tiniest-message", task_dir, empty)
    for name in empty:
        assert not verify("tiniest-message", task_dir, {name})
        assert not verify("tiniest-message", task_dir, {best, name})


def test_the_biggest_file_sits_below_the_top_level_and_has_few_long_lines(
    prepared,
):
    task_dir = prepared("disk-hog")
    path = sh(PATHS["disk-hog"], task_dir)
    assert path.count("/") >= 2
    lines = int(sh(f"wc -l < {path}", task_dir))
    most = sh(DECOYS["disk-hog"]["most lines"], task_dir)
    assert lines * 100 < int(
        sh(f"find uploads -name {most} | xargs cat | wc -l", task_dir)
    )


def test_memory_is_written_in_both_units_and_the_most_is_in_gib(prepared):
    task_dir = prepared("roomiest-host")
    units = names("awk '$1 == \"memory:\" {print $3}' inventory/*/*.yaml", task_dir)
    assert units == {"MiB", "GiB"}
    best = right("roomiest-host", task_dir)
    line = sh(f"grep '^memory:' inventory/{best}/hardware.yaml", task_dir)
    assert line.endswith("GiB")


def test_each_scan_was_modified_after_the_date_in_its_name(prepared):
    task_dir = prepared("stale-scan")
    rows = sh(
        "find scans -type f -printf '%TY-%Tm-%Td %f\\n' "
        "| sed -E 's/^([^ ]+) .*-([0-9-]{10})\\.txt$/\\1 \\2/'",
        task_dir,
    ).splitlines()
    assert len(rows) == 8
    assert all(modified > named for modified, named in map(str.split, rows))
