"""Tool classes: a shell call blocks the programs it ran, not the shell."""

from __future__ import annotations

import pytest

from roles.claims.evidence import format_evidence, parse_evidence
from roles.safety import programs
from roles.toolclass import (
    blocked_program,
    cut_call,
    describe,
    other_ways,
    tool_classes,
)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("wc -l data.csv", ["wc"]),
        ("cat data.csv | awk -F, '{s+=$2} END {print s}'", ["cat", "awk"]),
        ("cd project && find . -name '*.py' | wc -l", ["cd", "find", "wc"]),
        ("sudo -u bob /usr/bin/python3 x.py; python3 y.py", ["python3"]),
        ("LC_ALL=C sort names.txt | uniq -c", ["sort", "uniq"]),
        ('echo "$(ls src)"', ["echo", "ls"]),
        ("", []),
    ],
)
def test_programs_lists_each_program_a_command_runs_once(command, expected):
    assert programs(command) == expected


def test_a_shell_call_is_classed_by_its_programs_without_neutral_ones():
    assert tool_classes("shell", {"command": "cd data && wc -l a.csv"}) == ["shell:wc"]
    assert tool_classes("shell", {"command": "cd /missing"}) == []
    written = "mkdir -p w && echo 'hello' > w/hello.py && chmod +x w/hello.py"
    assert tool_classes("shell", {"command": written}) == []
    assert tool_classes("shell", {"command": "python3 w/hello.py"}) == ["shell:python3"]
    assert tool_classes("read_file", {"path": "a.csv"}) == ["read_file"]
    assert tool_classes("shell", {}) == ["shell"]


def test_blocked_program_names_the_first_blocked_program_of_a_command():
    blocked = ["glob", "shell:wc"]
    assert blocked_program("grep -c x a.txt | wc -l", blocked) == "wc"
    assert blocked_program("awk 'END {print NR}' a.txt", blocked) == ""
    assert blocked_program("wc -l a.txt", ["shell"]) == ""


def test_describe_says_where_a_program_is_blocked():
    assert describe("shell:wc") == "wc (in the shell)"
    assert describe("glob") == "glob"


def test_a_call_whose_target_was_cut_short_is_named_by_its_programs():
    # A real Megram kept "python3 -c '…; prin…" and a later run ran it as written.
    script = "import csv,sys; v=[float(r[2]) for r in csv.reader(open(sys.argv[1]))]"
    long = f"python3 -c '{script}; print(sum(v))' " + "a" * 80
    cut = parse_evidence(
        format_evidence("shell", {"command": long}, "[exit code 0]\n1")
    )
    assert cut.target.endswith("…")
    assert cut_call(cut) == "shell:python3 (a long command, not kept)"
    path = parse_evidence(
        format_evidence("read_file", {"path": "/d/" + "p" * 130}, "x")
    )
    assert cut_call(path) == "read_file (a long argument, not kept)"
    whole = parse_evidence(format_evidence("shell", {"command": "wc -l a"}, "1 a"))
    assert cut_call(whole) == ""


def test_the_hint_for_a_blocked_wc_counts_files_as_well_as_lines():
    # Told only how to count a file's lines, a real run answered a count of
    # files with the length of one file.
    hint = other_ways("wc")
    assert "grep -c '' FILE" in hint and "| grep -c . counts files" in hint
    assert other_ways("python3") == ""
