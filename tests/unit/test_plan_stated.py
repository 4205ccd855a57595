"""A plan keeps only the criteria its request states; the answer's form is code's.

The cases are the plans a small model wrote (guessed totals, numbers counted
out one check each, whole-line formats of a count, a key's guessed value), now
judged by one rule: none of their guesses reaches R4a, and the right answer
meets what is left.
"""

import pytest

from roles.agent_validator_judge import judge
from roles.claims.checks import evaluate_check
from roles.claims.evidence import format_evidence
from roles.claims.question import Question, read_question
from roles.contracts import ExecutionResult, normalise_criterion
from roles.llm.offline import OfflineModel
from roles.planning.shape import shape_plan
from roles.planning.stated import demanded_tokens, keep_stated
from tests.unit.test_checks import shell_result
from tests.unit.test_plan_shape import step

TOTAL = "What is the total of the amount column in /d/orders.csv?"
ZEROS = "How many items in /d/inventory.csv have a quantity of 0?"
KEY = "What is max_connections in /d/db/config.yaml?"
LINES = "How many lines does /d/data.txt have?"
EXIT_OK = {"criterion": "ok", "check": {"type": "exit_code", "value": 0}}


def matches(pattern: str) -> dict:
    return {"criterion": "x", "check": {"type": "output_matches", "pattern": pattern}}


def contains(value) -> dict:
    return {"criterion": "x", "check": {"type": "output_contains", "value": value}}


def shaped(request: str, *criteria, question: Question | None = None):
    sub = step("work", 1, *criteria)
    [out], notes = keep_stated([sub], request, question or read_question(request))
    return [normalise_criterion(c) for c in out.success_criteria], notes


def kinds(criteria) -> list[str]:
    return [(c.check or {}).get("type", "text") for c in criteria]


def answered(request: str, command: str, printed: str, claim: str):
    """Return the verdicts of one attempt that ran ``command`` and claimed ``claim``."""
    sub = step("work", 1)
    [sub], _ = keep_stated([sub], request, read_question(request))
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output=claim,
        tool_calls=[format_evidence("shell", {"command": command}, printed)],
    )
    criteria = [normalise_criterion(c) for c in sub.success_criteria]
    judged = judge(sub, result, criteria, OfflineModel(), ".", None, (), request, None)
    return judged.verdicts


# Guessed answers ------------------------------------------------------------------


def test_a_guessed_total_never_reaches_r4a_and_the_right_total_meets_the_form():
    guess = matches("/total amount: 123456/")
    criteria, notes = shaped(TOTAL, EXIT_OK, guess, "the total is stated")
    assert kinds(criteria) == ["exit_code", "answer_form"]
    assert any("123456" in n and "does not state" in n for n in notes)
    # python3's csv module printed the right total: the guess failed it.
    right = shell_result("python3 -c …", "[exit code 0]\n13467\n")
    assert not evaluate_check(guess["check"], right, workspace=".").passed
    [verdict] = answered(TOTAL, "python3 -c …", "[exit code 0]\n13467\n", "13467")
    assert verdict.verdict == "pass" and verdict.rule == "answer_form"


def test_several_guesses_of_one_subtask_leave_one_form_check():
    criteria, notes = shaped(
        TOTAL, contains("13952"), matches(r"total: 1\d+"), contains(42)
    )
    assert kinds(criteria) == ["answer_form"] and len(notes) == 3


def test_a_guessed_value_of_a_key_is_left_out():
    # Seen in the control bench: round 2 checked "max_connections: 100".
    for value in (
        contains("max_connections: 100"),
        matches(r"max_connections:\s*100$"),
        matches(r"^max_connections: (100|\d{3})"),
        matches(r"max_connections: \d+"),
    ):
        criteria, notes = shaped(KEY, value)
        assert kinds(criteria) == ["answer_form"] and notes


def test_numbers_counted_out_one_check_each_are_left_out():
    # Ten checks /0/ … /9/: no count meets them all, and GGS blocked awk for it.
    criteria, notes = shaped(ZEROS, EXIT_OK, *(matches(str(n)) for n in range(10)))
    assert kinds(criteria) == ["exit_code", "answer_form"] and len(notes) == 10
    criteria, _ = shaped(ZEROS, *(contains(f"{n} kg (net)") for n in range(3)))
    assert kinds(criteria) == ["answer_form"]
    [verdict] = answered(ZEROS, "awk … inventory.csv", "[exit code 0]\n10\n", "10")
    assert verdict.verdict == "pass"


def test_whole_line_formats_of_a_count_are_left_out_and_the_count_meets_the_form():
    criteria, _ = shaped(LINES, matches(r"^\d+$"), EXIT_OK, matches(r"^\d+ lines$"))
    assert kinds(criteria) == ["exit_code", "answer_form"]
    for claim, met in (("137", True), ("137 lines", True), ("about a hundred", False)):
        [verdict] = answered(LINES, "wc -l < /d/data.txt", "[exit code 0]\n137", claim)
        assert (verdict.verdict == "pass") is met, claim


def test_a_name_asked_for_is_not_a_number_whatever_the_plan_checked():
    # "Which users …": a line count a tool really printed is no list of names.
    request = "Which users made more than 3 requests according to /d/access.log?"
    criteria, _ = shaped(request, matches(".*"))
    assert kinds(criteria) == ["answer_form"]
    [verdict] = answered(request, "wc -l /d/access.log", "[exit code 0]\n240", "240")
    assert verdict.verdict == "fail" and verdict.rule == "names-not-stated"


def test_a_format_the_request_quotes_is_kept():
    request = "How many lines does /d/a.log have? Answer as 'lines: N'."
    criteria, notes = shaped(request, matches(r"lines: \d+"))
    assert kinds(criteria) == ["output_matches", "answer_form"] and not notes


# What other requests keep ------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_text", "value"),
    [
        ("Write a script that prints 1 2 3.", contains("1 2 3")),
        ("Create /d/hi.py that prints 'hello from artoo', then run it.",
         matches("hello from artoo")),
        ("Write the word ok into /d/out.txt", EXIT_OK),
    ],
)  # fmt: skip
def test_a_check_of_what_the_request_states_is_kept_as_written(request_text, value):
    criteria, notes = shaped(request_text, value)
    assert criteria == [normalise_criterion(value)] and notes == []


def test_an_unstated_or_empty_check_of_another_request_is_left_out():
    request = "Rename every .jpeg file in /d/photos so it ends in .jpg instead."
    for value in (contains("renamed 5 files"), matches(".*"), matches("regex")):
        criteria, notes = shaped(request, value)
        assert criteria == [] and len(notes) == 1


def test_a_quoted_criterion_is_a_check_for_code_not_the_model():
    request = "Create /d/hi.py that prints 'hello from artoo', then run it."
    criteria, _ = shaped(request, "the output contains 'hello from artoo'")
    assert criteria[0].check == {"type": "output_contains", "value": "hello from artoo"}


def test_file_exists_is_kept_only_for_a_file_the_request_makes():
    made = {"criterion": "made", "check": {"type": "file_exists", "path": "/d/out.txt"}}
    other = {"criterion": "x", "check": {"type": "file_exists", "path": "/d/x.txt"}}
    assert shaped("Write the word ok into /d/out.txt", made)[0] == [
        normalise_criterion(made)
    ]
    assert shaped("Write the word ok into /d/out.txt", other)[0] == []
    assert kinds(shaped("How many lines does /d/out.txt have?", made)[0]) == [
        "answer_form"
    ]


def test_demanded_tokens_leave_regex_syntax_out():
    assert demanded_tokens(matches(r"^\d{1,6}(\.[0-9]{2})?$")["check"]) == []
    assert demanded_tokens(matches(r"(?i)total:\s+(?P<n>\d+)")["check"]) == ["total"]
    assert demanded_tokens(contains(13952)["check"]) == ["13952"]


def test_the_plan_as_it_runs_leads_with_the_request_and_says_what_was_left_out():
    sub = step("Step 1: read the file. Step 2: count the lines.", 1, matches("12345"))
    [run], _, notes = shape_plan([sub], [], TOTAL, join=True)
    assert run.intent == TOTAL
    assert run.context.startswith("Planned steps: Step 1: read the file.")
    assert kinds(run.success_criteria) == ["answer_form"]
    assert any("12345" in note for note in notes)


def test_every_subtask_of_a_parallel_plan_carries_the_request():
    request = "How many lines do /d/a.txt and /d/b.txt have?"
    plan = [step("count a", 1), step("count b", 1)]
    shaped_plan, _, _ = shape_plan(plan, [], request, join=True)
    assert [s.intent for s in shaped_plan] == ["count a", "count b"]
    assert all(
        s.context.endswith(f"The user's request: {request}") for s in shaped_plan
    )


# What an output check once had to be read as, under a question of a number ------


@pytest.mark.parametrize(
    ("request_text", "check"),
    [
        # A bare-number pattern, which no worded claim meets as written.
        (TOTAL, matches("^[0-9]+$")),
        (TOTAL, matches(r"^\d+(\.\d+)?$")),
        # A word of the count question, which no number holds.
        ("How many lines in /d/app.log contain the word ERROR?", contains("ERROR")),
        ("How many lines in /d/app.log contain the word ERROR?", matches("ERROR")),
        # A line of the listing that was counted, which no count is.
        ("How many Python files are there under /srv/p?", matches(r".*\.py$")),
        ("How many Python files are there under /srv/p?", matches(r"/^src\/.*$/")),
        # A command copied into the check, which can never match.
        ("How many Python files are there under /srv/p?",
         matches("ls $dir | grep -c '.*\\.py'")),
    ],
)  # fmt: skip
def test_a_check_no_number_can_meet_never_reaches_r4a_and_the_number_answers(
    request_text, check
):
    criteria, notes = shaped(request_text, check)
    assert kinds(criteria) == ["answer_form"] and notes
    [ok] = answered(request_text, "count it", "[exit code 0]\n17\n", "17")
    assert ok.verdict == "pass"
    [gave_up] = answered(
        request_text, "count it", "[exit code 0]\n17\n", "I could not count them"
    )
    assert gave_up.verdict == "fail" and gave_up.rule == "number-not-stated"


def test_without_steps_a_one_step_plan_runs_the_request_alone():
    sub = step("Step 1: read the file. Step 2: count the lines.", 1)
    sub = sub.model_copy(update={"context": "The file is /d/orders.csv"})
    [run], _, _ = shape_plan([sub], [], TOTAL, join=True, steps=False)
    assert run.intent == TOTAL and run.context == "The file is /d/orders.csv"


# What memory recalled -------------------------------------------------------------


def test_a_criterion_copied_from_memory_is_left_out_one_from_the_request_is_kept():
    request = "Summarise the changes listed in /d/CHANGELOG.md for the release notes."
    recalled = (
        "Succeeded. Worked: shell:cat /d/notes.md → # Notes (from the related "
        "task: summarise notes)\nThe merged output meets all the task criteria."
    )
    copied = "The merged output meets all the task criteria"
    asked = "the summary covers the changes listed for the release"
    sub = step("work", 1, copied, asked)
    question = read_question(request)
    [out], notes = keep_stated([sub], request, question, recalled)
    assert [normalise_criterion(c).criterion for c in out.success_criteria] == [asked]
    assert any("memory's, not the request's" in note for note in notes)
    # Without memory the same plan keeps both, as written.
    [plain], _ = keep_stated([sub], request, question)
    assert len(plain.success_criteria) == 2
