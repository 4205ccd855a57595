"""A total is computed, not read: a value copied from the data is not the answer."""

import pytest

from roles.claims.computed import (
    NUMBER,
    column_total_command,
    computed,
    line_count_command,
    word_count_command,
)
from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import invented_facts
from roles.claims.field_values import field_value
from roles.claims.question_words import (
    asks_for_aggregate,
    asks_for_file_count,
    counted_word,
)
from roles.contracts import ExecutionResult, SubTask

SALES = (
    "region,product,units,amount\n"
    "west,chair,8,770\nsouth,chair,6,1144\neast,rug,2,310\n"
)
READ = format_evidence("read_file", {"path": "/srv/sales.csv"}, SALES)
AWK = format_evidence(
    "shell",
    {"command": "awk -F, 'NR>1{s+=$4} END{print s}' sales.csv"},
    "[exit code 0]\n2224",
)


def judged(intent: str, claim: str, *calls: str, request: str = "") -> str:
    """Return why R4a's evidence rule rejects the claim, or "" when it holds."""
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent=intent)
    result = ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=list(calls)
    )
    return invented_facts(subtask, result, request)


def test_a_total_copied_from_one_row_of_the_data_fails():
    reason = judged("Sum the amount column of sales.csv", "1144", READ)
    assert "'1144' as a total or count, but no tool computed it" in reason


def test_the_request_makes_a_subtask_an_aggregate_one():
    request = "What is the total of the amount column in /srv/sales.csv?"
    assert judged("Extract the amount column", "1144", READ, request=request)


def test_a_total_a_command_printed_passes():
    assert judged("Sum the amount column of sales.csv", "2224", READ, AWK) == ""


def test_a_value_looked_up_in_the_data_passes_when_no_total_is_asked():
    assert judged("Read the amount of the south chair sale", "1144", READ) == ""


def test_the_total_line_of_a_multi_file_count_passes_but_one_files_count_not():
    wc = format_evidence(
        "shell",
        {"command": "wc -l a.log b.log"},
        "[exit code 0]\n 10 a.log\n 25 b.log\n 35 total",
    )
    assert judged("count the lines of the logs", "35", wc) == ""
    assert "'25'" in judged("count the lines of the logs", "25", wc)


def test_a_number_of_the_planners_step_labels_is_not_known():
    # A real plan: "Step 1: Read the CSV file. Step 2: …"; the claim {"count": 1}.
    intent = "Step 1: Read the CSV file. Step 2: Filter. Step 3: Count them."
    request = "How many items in /srv/inventory.csv have a quantity of 0?"
    reason = judged(intent, '{"count": 1}', READ, request=request)
    assert reason.startswith("the claimed output states '1'")
    listed = "1) read the file\n2) count the rows"
    assert judged(listed, "2", READ, request=request)
    assert judged("Count rows with quantity over 3", "3", READ, request=request) == ""


def test_a_number_the_request_states_is_known():
    request = "How many of the 3 files are empty?"
    assert judged("count the empty files", "3", READ, request=request) == ""


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("137 /var/tmp/tasks/20261125-201031/data.txt", ["137"]),
        ("Total: 44025.5", ["44025.5"]),
        ("file-0024.txt part01 v2 3.11.2", []),
    ],
)
def test_numbers_are_standalone_values_not_digits_in_names(text, numbers):
    assert NUMBER.findall(text) == numbers


def test_failed_calls_compute_nothing_and_questions_are_recognised():
    refused = format_evidence("shell", {"command": "x"}, "ERROR: 42")
    assert not computed("42", [refused])
    assert asks_for_aggregate("How many lines does it have?")
    assert not asks_for_aggregate("Read settings.ini and tell me the port")


def test_a_claim_that_reports_the_data_itself_is_not_read_as_a_total():
    request = "What is the total of the amount column in /srv/sales.csv?"
    assert judged("Read sales.csv", SALES, READ, request=request) == ""


def test_an_invented_count_is_told_to_run_a_command_that_prints_it():
    reason = judged("Count the rows of sales.csv", "1000", READ)
    assert "'1000', which no tool output shows" in reason
    assert "run a command that prints it (wc -l, grep -c, awk)" in reason
    invented_path = judged("Find the file that defines f", "src/zz.py", READ)
    assert "'src/zz.py', which no tool output shows" in invented_path
    assert "wc -l" not in invented_path


WRONG_COLUMN = format_evidence(
    "shell",
    {"command": "awk -F, '{s+=$2} END{print s}' sales.csv"},
    "[exit code 0]\n0",
)


def test_a_sum_of_zero_is_refused_as_the_wrong_column():
    request = "What is the total of the amount column in /srv/sales.csv?"
    reason = judged("Sum the amount column", "0", WRONG_COLUMN, request=request)
    assert reason.startswith("the claimed sum is 0")
    assert "head -1" in reason
    assert judged("Average the amount column", '{"average": 0.0}', WRONG_COLUMN)


def test_a_count_of_zero_with_a_listing_and_a_nonzero_sum_stand():
    grep = format_evidence("shell", {"command": "grep -c ERROR app.log"}, "0")
    none = format_evidence("shell", {"command": "grep ERROR app.log"}, "")
    assert judged("How many lines contain ERROR?", "0", grep, none) == ""
    assert judged("Count the lines whose total is over 5", "0", grep, none) == ""
    assert judged("Sum the amount column of sales.csv", "2224", READ, AWK) == ""


def test_a_count_printed_beside_the_commands_own_error_is_not_computed():
    unset = format_evidence(
        "shell",
        {"command": "find $directory -type f -name '*.py' | wc -l"},
        "[exit code 0]\nbash: line 1: directory: unbound variable\n0\n",
    )
    reason = judged("Count the .py files under src", "0", unset)
    assert reason.startswith(
        "the command that printed '0' also reported an error (bash: line 1: "
        "directory: unbound variable)"
    )
    missing = format_evidence(
        "shell",
        {"command": "find /srv/nowhere -name '*.py' | wc -l"},
        "[exit code 0]\nfind: '/srv/nowhere': No such file or directory\n0\n",
    )
    assert "No such file or directory" in judged("How many .py files?", "0", missing)
    clean = format_evidence(
        "shell", {"command": "find src -name '*.py' | wc -l"}, "[exit code 0]\n0\n"
    )
    listed = format_evidence(
        "shell", {"command": "find src -name '*.py'"}, "[exit code 0]\n"
    )
    assert judged("How many .py files?", "0", missing, clean, listed) == ""


def test_a_counted_error_message_in_the_data_is_not_the_commands_error():
    grep = format_evidence(
        "shell",
        {"command": "grep -c 'No such file or directory' app.log"},
        "[exit code 0]\n7\n",
    )
    assert judged("How many lines say No such file or directory?", "7", grep) == ""


def test_a_total_written_with_thousands_separators_is_the_number_a_tool_printed():
    awk = format_evidence(
        "shell",
        {"command": "awk -F, 'NR>1{s+=$2} END{print s}' big.csv"},
        "[exit code 0]\n10250\n",
    )
    assert judged("What is the total of the amount column?", "10,250", awk) == ""
    assert "'10,251'" in judged(
        "What is the total of the amount column?", "10,251", awk
    )


def test_a_list_of_small_numbers_is_still_several_facts():
    wc = format_evidence(
        "shell", {"command": "wc -l a b"}, "[exit code 0]\n1 a\n2 b\n3 total\n"
    )
    assert judged("Report the line counts", "1,2,3", wc) == ""
    assert "'9'" in judged("Report the line counts", "1,2,9", wc)


def test_a_count_of_0_needs_a_listing_that_shows_nothing_is_there():
    ls = format_evidence(
        "shell",
        {"command": "ls -l project | grep -c .py"},
        "[exit code 1]\n0\n",
    )
    reason = judged("How many Python files are there under project?", "0", ls)
    assert reason.startswith("the claimed count is 0, but no tool listing shows")
    find = format_evidence(
        "shell", {"command": "find project -name '*.py'"}, "[exit code 0]\n"
    )
    assert judged("How many Python files are there under project?", "0", ls, find) == ""
    glob = format_evidence(
        "glob", {"pattern": "**/*.py"}, "(no files matched pattern **/*.py under /p)"
    )
    wc = format_evidence(
        "shell", {"command": "find project -name '*.py' | wc -l"}, "[exit code 0]\n0\n"
    )
    assert judged("Count the .py files", "0", wc).startswith("the claimed count is 0")
    assert judged("Count the .py files", "0", glob, wc) == ""
    grep = format_evidence(
        "shell", {"command": "grep -c ERROR app.log"}, "[exit code 1]\n0\n"
    )
    assert judged("Count the lines with ERROR in app.log", "0", grep)
    assert judged("Count the lines with ERROR in app.log", "7", grep)
    quiet = format_evidence("shell", {"command": "mkdir -p out"}, "[exit code 0]\n")
    assert judged("How many Python files are there under project?", "0", ls, quiet)


def test_no_file_matching_a_glob_shows_nothing_of_a_files_rows():
    # The counted file is what a failed download left; a glob for something
    # else matched nothing. Neither shows that the report has no rows.
    wc = format_evidence(
        "shell", {"command": "wc -l /w/q3.csv"}, "[exit code 0]\n0 /w/q3.csv\n"
    )
    glob = format_evidence(
        "glob", {"pattern": "*.py", "root": "/w"}, "(no files matched pattern *.py)"
    )
    asked = "Download http://h/reports/q3.csv and tell me how many rows it has."
    assert judged(asked, "The CSV file has 0 rows.", wc, glob).startswith(
        "the claimed count is 0, but no tool listing shows"
    )
    empty = format_evidence(
        "shell", {"command": "grep -v '^#' /w/q3.csv"}, "[exit code 1]\n"
    )
    assert judged(asked, "The CSV file has 0 rows.", wc, empty) == ""


def test_a_line_count_is_not_a_sum():
    wc = format_evidence(
        "shell", {"command": "wc -l sales.csv"}, "[exit code 0]\n41 sales.csv\n"
    )
    reason = judged("What is the total of the amount column in sales.csv?", "41", wc)
    assert reason.startswith(
        "the claimed 41 was printed by a command that counts lines or matches"
    )
    assert judged("How many lines does sales.csv have in total?", "41", wc) == ""
    assert judged("Sum the amount column of sales.csv", "2224", READ, AWK) == ""


@pytest.mark.parametrize(
    ("request_text", "command"),
    [
        ("How many lines does /srv/sales.csv have?", "wc -l /srv/sales.csv"),
        ("Count the lines of the sales file.", "wc -l /srv/sales.csv"),
        ("What is the number of lines in it?", "wc -l /srv/sales.csv"),
        ("How many lines contain chair?", ""),
        ("How many lines in sales.csv start with west?", ""),
        ("What is the total amount?", ""),
    ],
)
def test_a_line_count_of_the_one_file_read_is_told_as_the_command(
    request_text, command
):
    assert line_count_command(request_text, [READ]) == command


def test_the_line_count_command_needs_exactly_one_file_read_and_quotes_it():
    spaced = format_evidence("read_file", {"path": "/srv/my data.txt"}, "a\nb\n")
    assert line_count_command("How many lines does it have?", [spaced]) == (
        "wc -l '/srv/my data.txt'"
    )
    assert line_count_command("How many lines does it have?", [READ, spaced]) == ""
    assert line_count_command("How many lines does it have?", [AWK]) == ""


def test_a_span_read_with_read_file_lines_is_the_file_read():
    lines = format_evidence(
        "read_file_lines",
        {"path": "/srv/notes.txt", "start": 1, "end": 2},
        "[/srv/notes.txt: lines 1-2 of 9]\nL1: a\nL2: b",
    )
    assert line_count_command("How many lines does it have?", [lines]) == (
        "wc -l /srv/notes.txt"
    )


def test_an_invented_line_count_is_told_the_command_on_the_file_read():
    reason = judged(
        "Read the file and count its lines.",
        "The file contains 100 lines.",
        READ,
        request="How many lines does /srv/sales.csv have?",
    )
    assert "'100', which no tool output shows" in reason
    assert "call the shell tool with the command wc -l /srv/sales.csv" in reason


@pytest.mark.parametrize(
    ("request_text", "command"),
    [
        (
            "What is the total of the amount column in /srv/sales.csv?",
            "awk -F, 'NR>1{s+=$4} END{print s}' /srv/sales.csv",
        ),
        (
            "What is the average of units?",
            "awk -F, 'NR>1{s+=$3; n++} END{print s/n}' /srv/sales.csv",
        ),
        ("What is the total amount for the west region?", ""),
        ("How many rows have an amount over 1000?", ""),
        ("What is the total of the price column?", ""),
    ],
)
def test_a_column_total_over_the_one_csv_read_is_told_as_the_command(
    request_text, command
):
    assert column_total_command(request_text, [READ]) == command


def test_a_column_total_needs_one_csv_read():
    other = format_evidence("read_file", {"path": "/srv/b.csv"}, SALES)
    text = format_evidence("read_file", {"path": "/srv/notes.txt"}, SALES)
    request = "What is the total of the amount column?"
    assert column_total_command(request, [READ, other]) == ""
    assert column_total_command(request, [text]) == ""
    assert column_total_command(request, [READ, READ]).endswith("/srv/sales.csv")


def test_an_invented_column_total_is_told_the_awk_command_for_that_column():
    reason = judged(
        "Read sales.csv and sum the amount column.",
        "10000",
        READ,
        request="What is the total of the amount column in /srv/sales.csv?",
    )
    assert "'10000', which no tool output shows" in reason
    assert (
        "call the shell tool with the command awk -F, 'NR>1{s+=$4} END{print s}' "
        "/srv/sales.csv and answer with its number" in reason
    )


LOG_READ = format_evidence(
    "read_file", {"path": "/srv/app.log"}, "08:00 WARN slow\n08:01 ERROR refused\n"
)


@pytest.mark.parametrize(
    ("request_text", "command"),
    [
        ("How many lines in /srv/app.log contain the word ERROR?", "grep -c ERROR"),
        ("How many lines mention 'payment refused'?", "grep -c 'payment refused'"),
        ("How many lines does /srv/app.log have?", ""),
        ("What does /srv/app.log say about ERROR?", ""),
    ],
)
def test_a_count_of_the_lines_holding_a_word_is_told_as_grep_on_the_file_read(
    request_text, command
):
    told = word_count_command(request_text, [LOG_READ])
    assert told == (f"{command} /srv/app.log" if command else "")
    assert word_count_command(request_text, [LOG_READ, READ]) == ""


def test_an_invented_count_of_a_word_is_told_grep_and_one_of_a_field_is_not():
    reason = judged(
        "Read the file and count the lines that contain the word ERROR.",
        "1",
        LOG_READ,
        request="How many lines in /srv/app.log contain the word ERROR?",
    )
    assert "call the shell tool with the command grep -c ERROR /srv/app.log" in reason
    reason = judged(
        "Count the entries.",
        "1",
        LOG_READ,
        request="How many entries in /srv/app.log have the level ERROR?",
    )
    assert "'1', which no tool output shows" in reason
    assert "with the command grep" not in reason


def test_the_subtask_intent_names_the_command_when_the_request_is_not_known():
    reason = judged("Count the lines of /srv/sales.csv", "100", READ)
    assert "call the shell tool with the command wc -l /srv/sales.csv" in reason


@pytest.mark.parametrize(
    ("request_text", "word"),
    [
        ("How many lines in app.log contain the word ERROR?", "ERROR"),
        ("How many lines in app.log contain ERROR?", "ERROR"),
        ("How many lines mention 'timeout'?", "timeout"),
        ("Count the lines containing the string fail.", "fail"),
        ("How many rows with an amount over 1000?", ""),
        ("How many lines contain errors?", ""),
        ("What is the total of lines that contain ERROR?", ""),
    ],
)
def test_the_word_a_count_question_counts(request_text, word):
    assert counted_word(request_text) == word


LOG = "/srv/app.log"
WC = format_evidence("shell", {"command": f"wc -l {LOG}"}, f"[exit code 0]\n412 {LOG}")
GREP = format_evidence(
    "shell", {"command": f"grep -c ERROR {LOG}"}, "[exit code 0]\n29"
)
ASKED = f"How many lines in {LOG} contain the word ERROR?"


def test_a_count_of_a_word_printed_by_a_command_that_looks_for_it_stands():
    assert judged("Count the ERROR lines", "29", GREP, request=ASKED) == ""


def test_a_count_of_every_line_is_not_the_count_of_the_lines_with_the_word():
    reason = judged("Count the ERROR lines", "412", WC, request=ASKED)
    assert reason.startswith(f"the claimed 412 was printed by `wc -l {LOG}`")
    assert "count only those (grep -c ERROR FILE)" in reason
    assert (
        judged("Count the lines", "412", WC, request=f"How many lines does {LOG} have?")
        == ""
    )


def test_a_word_in_the_counted_files_path_is_not_looking_for_it():
    path = "/srv/tasks/error-count/app.log"
    wc = format_evidence(
        "shell", {"command": f"wc -l {path}"}, f"[exit code 0]\n412 {path}"
    )
    asked = f"How many lines in {path} contain the word ERROR?"
    reason = judged("Count the lines that contain 'ERROR'", "412", wc, request=asked)
    assert reason.startswith(f"the claimed 412 was printed by `wc -l {path}`")
    named = format_evidence(
        "shell", {"command": "wc -l error.log"}, "[exit code 0]\n412 error.log"
    )
    assert judged("Count", "412", named, request=asked).startswith("the claimed 412")
    inverted = format_evidence(
        "shell", {"command": "grep -vc ERROR app.log"}, "[exit code 0]\n383"
    )
    assert judged("Count", "383", inverted, request=asked).startswith("the claimed 383")


@pytest.mark.parametrize(
    "command",
    [
        "grep -c ERROR /srv/tasks/error-count/app.log",
        "grep -ci 'error' app.log",
        "awk '/ERROR/' /srv/app.log | wc -l",
        "awk '/ERROR/{n++} END{print n}' app.log",
    ],
)
def test_a_command_that_searches_for_the_word_counts_it(command):
    grep = format_evidence("shell", {"command": command}, "[exit code 0]\n29")
    asked = "How many lines in /srv/app.log contain the word ERROR?"
    assert judged("Count the ERROR lines", "29", grep, request=asked) == ""


PROJECT = "/srv/project"
FIND = format_evidence(
    "shell",
    {"command": f"find {PROJECT} -type f -name '*.py'"},
    "[exit code 0]\n" + "\n".join(f"{PROJECT}/app/m{n}.py" for n in range(17)),
)
FILES_ASKED = f"How many Python files are there under {PROJECT}?"


def shell(command: str, output: str) -> str:
    return format_evidence("shell", {"command": command}, f"[exit code 0]\n{output}")


@pytest.mark.parametrize(
    "command",
    [
        f"wc -l {PROJECT}/app/m0.py",
        f"cat {PROJECT}/app/m0.py | wc -l",
        # With wc blocked, a real run counted the same lines with grep and
        # was accepted (the answer 1, for 17 files).
        f"grep -c '' {PROJECT}/app/m0.py",
        f"awk 'END {{print NR}}' {PROJECT}/app/m0.py",
        f"sed -n '$=' {PROJECT}/app/m0.py",
        f"cat {PROJECT}/app/m0.py | grep -c ''",
    ],
)
def test_the_length_of_one_file_is_not_a_count_of_files(command):
    # A small model listed the 17 files, then answered with `wc -l` of one.
    length = shell(command, f"1 {PROJECT}/app/m0.py" if command[:2] == "wc" else "1")
    claim = '{"file_exists": true, "output_matches": {"count": 1}}'
    reason = judged("Count the Python files", claim, FIND, length, request=FILES_ASKED)
    assert reason.startswith(f"the claimed 1 was printed by `{command}`")
    assert "find DIR -type f -name '*.EXT' | wc -l" in reason


@pytest.mark.parametrize(
    "command",
    [
        f"find {PROJECT} -type f -name '*.py' | wc -l",
        f"ls -R {PROJECT} | grep -c '\\.py$'",
        f"find {PROJECT} -name '*.py' -exec echo {{}} \\; | wc -l",
        f"find {PROJECT} -name '*.py' | grep -c .",
        f"find {PROJECT} -name '*.py' | awk 'END {{print NR}}'",
        f"grep -rl --include='*.py' -e '' {PROJECT} | wc -l",
    ],
)
def test_a_count_of_the_listing_stands(command):
    counted = shell(command, "17")
    reason = judged("Count the Python files", "17", FIND, counted, request=FILES_ASKED)
    assert reason == ""


@pytest.mark.parametrize(
    ("request_text", "asked"),
    [
        ("How many Python files are there under /srv/project?", True),
        ("What is the number of .py files in src?", True),
        ("Count the directories under /srv.", True),
        ("How many test modules does the repo have?", True),
        ("How many lines in the files under src?", False),
        ("How many lines do the Python files have?", False),
        ("How many words are in notes.txt?", False),
        ("How many lines does /srv/a.py have?", False),
    ],
)
def test_which_questions_count_files(request_text, asked):
    assert asks_for_file_count(request_text) is asked


SERVICE = "/srv/service.log"
LEVELS = (
    "2024-06-01T08:00:00 ERROR job 212 failed: disk quota exceeded\n"
    "2024-06-01T08:01:00 WARN previous ERROR state cleared by operator\n"
    "2024-06-01T08:02:00 ERROR job 377 failed: disk quota exceeded\n"
    "2024-06-01T08:03:00 INFO job 415 step done"
)
LEVEL_ASKED = f"How many entries of {SERVICE} have the level ERROR?"


@pytest.mark.parametrize(
    ("request_text", "found"),
    [
        (LEVEL_ASKED, ("level", "ERROR")),
        ("How many requests in access.log have status 'FAILED'?", ("status", "FAILED")),
        ("Count the ERROR-level lines of app.log.", ("level", "ERROR")),
        ("How many tickets have severity: HIGH?", ("severity", "HIGH")),
        ("How many jobs have the status done?", ("", "")),
        ("What is the level ERROR about?", ("", "")),
        ("How many lines contain ERROR?", ("", "")),
    ],
)
def test_the_field_and_value_a_count_question_counts_by(request_text, found):
    assert field_value(request_text) == found


@pytest.mark.parametrize(
    "command", [f"grep -c ERROR {SERVICE}", f"grep ' ERROR ' {SERVICE} | wc -l"]
)
def test_a_count_of_the_lines_that_mention_the_value_is_not_a_count_by_field(command):
    counted = shell(command, "50")
    reason = judged("Count the ERROR entries", "50", counted, request=LEVEL_ASKED)
    assert reason.startswith(f"the claimed 50 was printed by `{command}`")
    assert "not the entries whose level is 'ERROR'" in reason
    assert f"(grep -m 5 ERROR {SERVICE})" in reason


def test_the_field_that_holds_the_value_is_read_off_the_lines_shown():
    shown = shell(f"grep ERROR {SERVICE}", LEVELS)
    counted = shell(f"grep -c ERROR {SERVICE}", "3")
    reason = judged("Count", "3", shown, counted, request=LEVEL_ASKED)
    assert f"""(awk '$2 == "ERROR"' {SERVICE} | wc -l)""" in reason
    # A real run showed two ERROR entries and two messages with ERROR in field 7.
    token = "2024-06-01T08:06:00 DEBUG parser saw the token ERROR in a comment"
    first, _, third, _ = LEVELS.split("\n")
    tied = shell(f"grep -m 4 ERROR {SERVICE}", "\n".join([token, first, token, third]))
    reason = judged("Count", "3", tied, counted, request=LEVEL_ASKED)
    assert f"""(awk '$2 == "ERROR"' {SERVICE} | wc -l)""" in reason


@pytest.mark.parametrize(
    "command",
    [
        f"awk '$2 == \"ERROR\"' {SERVICE} | wc -l",
        f"awk '$2 ~ /^ERROR$/ {{n++}} END {{print n}}' {SERVICE}",
        f"cut -d' ' -f2 {SERVICE} | grep -c ERROR",
        f"grep -cE '^[^ ]+ ERROR ' {SERVICE}",
    ],
)
def test_a_count_by_the_field_stands(command):
    counted = shell(command, "21")
    loose = shell(f"grep -c ERROR {SERVICE}", "50")
    assert judged("Count", "21", loose, counted, request=LEVEL_ASKED) == ""


def test_a_count_of_every_line_is_not_a_count_by_field_either():
    counted = shell(f"wc -l < {SERVICE}", "300")
    reason = judged("Count", "300", counted, request=LEVEL_ASKED)
    assert "which counts lines without looking for 'ERROR', not the entries" in reason


def test_a_count_of_mentions_stands_when_no_field_is_named():
    counted = shell(f"grep -c ERROR {SERVICE}", "50")
    asked = f"How many lines of {SERVICE} mention ERROR?"
    assert judged("Count", "50", counted, request=asked) == ""


PAYMENTS = "/srv/payments.csv"
QUOTED = (
    "id,payee,amount,currency\r\n"
    '1,"Smith, Jones & Co",500,EUR\r\n'
    "2,Acme Ltd,170,EUR\r\n"
    '3,"Baker, Lee",421,EUR\r\n'
)
QUOTED_READ = format_evidence("read_file", {"path": PAYMENTS}, QUOTED)
TOTAL_ASKED = f"What is the total of the amount column in {PAYMENTS}?"
PARSED = (
    "python3 -c 'import csv,sys; v=[float(r[2]) for r in "
    "list(csv.reader(open(sys.argv[1])))[1:] if len(r)>2]; s=sum(v); "
    f"print(int(s) if s==int(s) else s)' {PAYMENTS}"
)


def test_the_column_total_of_a_csv_with_quoted_commas_is_told_as_a_csv_parse():
    assert column_total_command(TOTAL_ASKED, [QUOTED_READ]) == PARSED


@pytest.mark.parametrize(
    "command",
    [
        f"awk -F, 'NR>1{{s+=$3}} END{{print s}}' {PAYMENTS}",
        f"awk -F',' '{{s+=$3}} END {{print s}}' {PAYMENTS}",
        f"cut -d, -f3 {PAYMENTS} | paste -sd+ | bc",
    ],
)
def test_a_sum_split_at_quoted_commas_is_refused_with_the_csv_parse(command):
    split = shell(command, "591")
    reason = judged(
        "Sum the amount column", "591", QUOTED_READ, split, request=TOTAL_ASKED
    )
    assert reason.startswith(f"the claimed 591 was printed by `{command}`")
    assert '("Smith, Jones & Co")' in reason
    assert f"({PARSED})" in reason


def test_a_sum_by_a_csv_parser_or_over_a_csv_without_quoted_commas_stands():
    parsed = shell(PARSED, "1091")
    assert judged("Sum", "1091", QUOTED_READ, parsed, request=TOTAL_ASKED) == ""
    awk = shell(f"awk -F, 'NR>1{{s+=$4}} END{{print s}}' {PAYMENTS}", "2224")
    assert judged("Sum", "2224", READ, awk, request=TOTAL_ASKED) == ""


def test_a_zero_sum_after_the_header_was_shown_is_told_the_command_that_sums():
    # A real attempt summed $5 of a four-column CSV twice, head -1 between.
    sales = "/d/sales.csv"
    wrong = shell(f"awk -F, 'NR>1 {{s+=$5}} END {{print s}}' {sales}", "0")
    header = shell(f"head -1 {sales}", "region,product,units,amount")
    reason = judged(
        "sum",
        "0",
        wrong,
        header,
        request=f"What is the total of the amount column in {sales}?",
    )
    assert reason.startswith("the claimed sum is 0")
    assert f"awk -F, 'NR>1{{s+=$4}} END{{print s}}' {sales}" in reason
