"""Checks a small planner counted out under a count question become one."""

import pytest

from roles.claims.checks import evaluate_check
from roles.planning.counted_checks import merge_counted_checks
from roles.planning.shape import shape_plan
from tests.unit.test_checks import shell_result
from tests.unit.test_plan_shape import step

QUESTION = "How many items in /d/inventory.csv have a quantity of 0?"


def matches(pattern: str) -> dict:
    return {"criterion": "x", "check": {"type": "output_matches", "pattern": pattern}}


def contains(value: str) -> dict:
    return {"criterion": "x", "check": {"type": "output_contains", "value": value}}


def test_ten_digit_checks_of_a_count_question_become_one_any_of_them_meets():
    exit_ok = {"criterion": "ok", "check": {"type": "exit_code", "value": 0}}
    sub = step("count", 1, exit_ok, *(matches(str(n)) for n in range(10)))
    [shaped], notes = merge_counted_checks([sub], QUESTION)

    assert [c.check["type"] for c in shaped.success_criteria] == [
        "exit_code",
        "output_matches",
    ]
    merged = shaped.success_criteria[1].check
    assert merged["pattern"] == "|".join(f"(?:{n})" for n in range(10))
    assert notes == [
        "count: 10 checks counting 0 to 9 (one number answers a count question) "
        "became one check any of them meets"
    ]
    # The right count, which failed /2/ as ten checks, meets the one check.
    counted = shell_result("awk … inventory.csv", "[exit code 0]\n10")
    counted = counted.model_copy(update={"output": "10"})
    assert evaluate_check(merged, counted, workspace=".").passed


def test_patterns_and_values_around_the_number_are_kept_in_the_one_check():
    sub = step("count", 1, *(matches(f"{n},.*") for n in range(4)))
    [shaped], _ = merge_counted_checks([sub], QUESTION)
    assert shaped.success_criteria[0].check["pattern"] == (
        "(?:0,.*)|(?:1,.*)|(?:2,.*)|(?:3,.*)"
    )
    sub = step("count", 1, *(contains(f"{n} kg (net)") for n in range(3)))
    [shaped], _ = merge_counted_checks([sub], QUESTION)
    assert shaped.success_criteria[0].check == {
        "type": "output_matches",
        "pattern": r"0\ kg\ \(net\)|1\ kg\ \(net\)|2\ kg\ \(net\)",
    }


@pytest.mark.parametrize(
    ("request_text", "numbers"),
    [
        # Not a count question: "print 1 2 3" may well need every number.
        ("Print the numbers 1 to 3, one per line.", (1, 2, 3)),
        # Two checks are not a run.
        (QUESTION, (1, 2)),
        # Numbers that do not count up by one.
        (QUESTION, (1, 2, 4)),
        (QUESTION, (1, 1, 2)),
    ],
)
def test_other_checks_are_kept_as_written(request_text, numbers):
    sub = step("print", 1, *(contains(str(n)) for n in numbers))
    [kept], notes = merge_counted_checks([sub], request_text)
    assert kept.success_criteria == sub.success_criteria and notes == []


def test_the_plan_as_it_runs_has_the_merge_and_says_so():
    sub = step("count", 1, *(matches(str(n)) for n in range(10)))
    [shaped], _, notes = shape_plan([sub], [], QUESTION, join=True)
    assert len(shaped.success_criteria) == 1
    assert any("10 checks counting 0 to 9" in note for note in notes)
