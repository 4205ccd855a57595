"""A count of files by grepping a listing for an unanchored extension."""

import pytest

from roles.claims.evidence import format_evidence
from roles.claims.name_patterns import loose_extension_count
from tests.unit.test_aggregate import judged

DIR = "/d/count-py/project"
QUESTION = f"How many Python files are there under {DIR}?"
INTENT = "Count the Python files"


def shell(command: str, output: str) -> str:
    return format_evidence("shell", {"command": command}, output)


def test_grep_c_of_an_unanchored_extension_over_a_listing_is_refused():
    # Seen from a 1.5B executor (make test-model, count-py, run 9113d185): ls -R
    # | grep -c .py counted 26 lines holding "py" after any character where
    # find counts 17 files, and the count was accepted.
    loose = shell(f"ls -R {DIR} | grep -c .py", "[exit code 0]\n26")
    reason = judged(INTENT, "26", loose, request=QUESTION)
    assert reason.startswith(
        f"the claimed 26 was printed by `ls -R {DIR} | grep -c .py`, whose "
        "pattern is not anchored at the end of the name"
    )
    assert "grep -c '\\.py$'" in reason


@pytest.mark.parametrize(
    "command",
    [
        f"ls -R {DIR} | grep -c '\\.py$'",
        f"find {DIR} -type f -name '*.py' | wc -l",
        f"find {DIR} -name '*.py' | grep -c py$",
        f"ls -R {DIR} | grep -v pyc | grep -c '.py$'",
    ],
)
def test_an_anchored_pattern_or_a_listing_by_name_stands(command):
    counted = shell(command, "[exit code 0]\n17")
    assert judged(INTENT, "17", counted, request=QUESTION) == ""


@pytest.mark.parametrize(
    "command",
    [
        f"ls -1 {DIR} | grep -c .py",
        f"find {DIR} | grep -ic '*.py'",
        f"tree {DIR} | grep --count py",
        f"ls -R {DIR} | grep -E -c '\\.py'",
    ],
)
def test_each_unanchored_spelling_is_found(command):
    entries = [shell(command, "[exit code 0]\n26")]
    assert loose_extension_count("26", entries) == command


def test_a_count_of_0_is_left_to_the_rule_of_zero_counts():
    # The loose pattern takes a superset of the names that end in .py: it
    # counts too many, never too few.
    loose = shell(f"ls -R {DIR} | grep -c .py", "[exit code 1]\n0")
    assert loose_extension_count("0", [loose]) == ""


def test_a_grep_of_file_contents_or_another_question_is_not_judged_here():
    # grep -c over a file counts its lines, not names.
    lines = shell("grep -c .py /d/files.txt", "[exit code 0]\n26")
    assert loose_extension_count("26", [lines]) == ""
    # Not a file count: a count of lines answered with one of a listing's
    # lines is refused as a count of another kind, not as a loose pattern.
    loose = shell(f"ls -R {DIR} | grep -c .py", "[exit code 0]\n26")
    reason = judged("Count lines", "26", loose, request="How many lines are in /d/a")
    assert "anchored" not in reason and "the number of lines" in reason


def test_the_reason_names_the_extension_that_was_counted():
    loose = shell("ls -R /d/logs | grep -c log", "[exit code 0]\n9")
    reason = judged(
        "Count the log files", "9", loose, request="How many log files are in /d/logs?"
    )
    assert "grep -c '\\.log$'" in reason and "-name '*.log'" in reason
