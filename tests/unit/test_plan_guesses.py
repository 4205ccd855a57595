"""Checks that guess the asked number become "a number a tool output shows"."""

import pytest

from roles.claims.checks import evaluate_check
from roles.planning.guessed_checks import guessed_numbers, replace_guessed_numbers
from roles.planning.shape import shape_plan
from tests.unit.test_checks import shell_result
from tests.unit.test_plan_counting import contains, matches
from tests.unit.test_plan_shape import step

TOTAL = "What is the total of the amount column in /d/orders.csv?"


def test_a_guessed_total_becomes_a_number_a_tool_shows_and_the_right_total_meets_it():
    exit_ok = {"criterion": "ok", "check": {"type": "exit_code", "value": 0}}
    guess = matches("/total amount: 123456/")
    sub = step("sum", 1, exit_ok, guess, "the total is stated")
    [shaped], notes = replace_guessed_numbers([sub], TOTAL)

    checks = [c.check if hasattr(c, "check") else c for c in shaped.success_criteria]
    assert checks == [
        {"type": "exit_code", "value": 0},
        {"type": "output_matches", "pattern": "^[0-9]+$"},
        "the total is stated",
    ]
    assert notes == [
        "sum: 'x' guessed the answer (123456, a number the request does not "
        "state); it became: the answer states a number a tool output shows"
    ]
    # python3's csv module printed the right total: the guess failed it, the
    # bare-number check passes it; a claim no tool output shows still fails.
    right = shell_result("python3 -c …", "[exit code 0]\n13467\n")
    right = right.model_copy(update={"output": "13467"})
    assert not evaluate_check(guess["check"], right, workspace=".").passed
    assert evaluate_check(checks[1], right, workspace=".").passed
    unshown = right.model_copy(update={"output": "13470"})
    assert not evaluate_check(checks[1], unshown, workspace=".").passed


def test_several_guesses_of_one_subtask_become_one_check():
    sub = step("sum", 1, contains("13952"), matches(r"total: 1\d+"), contains(42))
    [shaped], notes = replace_guessed_numbers([sub], TOTAL)
    assert len(shaped.success_criteria) == 1 and len(notes) == 3


@pytest.mark.parametrize(
    ("request_text", "value"),
    [
        # A number the request states is known, not guessed.
        ("How many lines of /d/a.log contain 'code 503'?", contains("503")),
        ("What is the sum of column 3 of /d/t.csv?", matches(r"column 3: \d+")),
        # Regex syntax: digits that stand for no number.
        (TOTAL, matches(r"^\d{1,6}(\.[0-9]{2})?$")),
        (TOTAL, matches(r"^(\d+)\1?$")),
        # Not a question whose answer is a number: the numbers are wanted.
        ("Write a script that prints 1 2 3.", contains("1 2 3")),
        ("Which file in /d is the largest?", contains("4096")),
        # Not an output check.
        (TOTAL, {"criterion": "x", "check": {"type": "exit_code", "value": 0}}),
    ],
)
def test_other_checks_are_kept_as_written(request_text, value):
    sub = step("work", 1, value)
    [kept], notes = replace_guessed_numbers([sub], request_text)
    assert kept.success_criteria == sub.success_criteria and notes == []


def test_only_the_numbers_the_request_lacks_are_named():
    assert guessed_numbers(contains("3 rows, total 900"), {"3"}) == ["900"]
    assert guessed_numbers(matches(r"[0-9]{3} of 200"), {"200"}) == []


def test_the_plan_as_it_runs_has_the_replacement_and_says_so():
    sub = step("sum", 1, matches("Total: 12345"))
    [shaped], _, notes = shape_plan([sub], [], TOTAL, join=True)
    assert shaped.success_criteria[0].check["pattern"] == "^[0-9]+$"
    assert any("guessed the answer (12345" in note for note in notes)


KEY = "What is max_connections in /d/db/config.yaml?"


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (contains("max_connections: 100"), r"max_connections:\ [0-9]+"),
        (matches(r"max_connections:\s*100$"), r"max_connections:\s*[0-9]+$"),
        (
            matches(r"^max_connections: (100|\d{3})"),
            r"^max_connections: ([0-9]+|\d{3})",
        ),
    ],
)
def test_a_guessed_value_of_a_key_asked_for_becomes_any_number(value, pattern):
    # Seen in the control bench (GGS renamed-file, run cda005cb): round 2
    # checked "max_connections: 100", a value the planner could not know.
    sub = step("read", 1, value)
    [shaped], notes = replace_guessed_numbers([sub], KEY)
    assert shaped.success_criteria[0].check == {
        "type": "output_matches",
        "pattern": pattern,
    }
    assert "guessed the answer (100" in notes[0]
    # The file's real value, as cat printed it, meets the check; another key
    # does not.
    shown = shell_result(
        "cat /d/db/config.yaml", "[exit code 0]\nmax_connections: 250\n"
    )
    shown = shown.model_copy(update={"output": "250"})
    check = shaped.success_criteria[0].check
    assert evaluate_check(check, shown, workspace=".").passed
    other = shell_result("cat /d/db/config.yaml", "[exit code 0]\nmax_threads: 250\n")
    assert not evaluate_check(check, other, workspace=".").passed


def test_a_key_check_without_a_guessed_number_is_kept():
    sub = step("read", 1, matches(r"max_connections: \d+"), contains("max_connections"))
    [kept], notes = replace_guessed_numbers([sub], KEY)
    assert kept.success_criteria == sub.success_criteria and notes == []
