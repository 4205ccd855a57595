"""Machine checks: each type passes and fails on real ExecutionResults."""

from __future__ import annotations

import pytest

from roles.claims.checks import evaluate_check
from roles.claims.evidence import format_evidence
from roles.claims.facts import last_exit_code, output_text
from roles.contracts import ExecutionResult


def shell_result(command: str, output: str, status: str = "completed"):
    return ExecutionResult(
        subtask_id="s1",
        status=status,
        output=output,
        tool_calls=[format_evidence("shell", {"command": command}, output)],
    )


def check(kind: str, result: ExecutionResult, workspace=None, **params):
    return evaluate_check({"type": kind, **params}, result, workspace=workspace or ".")


HELLO = shell_result("echo hello", "[exit code 0]\nhello\n")
MISSING = shell_result("ls /nope", "[exit code 2]\nls: cannot access '/nope'\n")


def test_exit_code_passes_on_the_expected_code():
    verdict = check("exit_code", HELLO, value=0)
    assert verdict.passed and verdict.evidence == "exit code 0 (matches)"


def test_exit_code_fails_on_another_code():
    verdict = check("exit_code", MISSING, value=0)
    assert not verdict.passed and verdict.evidence == "exit code 2 (expected 0)"


def test_exit_code_reads_the_last_shell_call():
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="done",
        tool_calls=[
            format_evidence("shell", {"command": "false"}, "[exit code 1]\n"),
            format_evidence("read_file", {"path": "a"}, "text"),
            format_evidence("shell", {"command": "true"}, "[exit code 0]\n"),
        ],
    )
    assert last_exit_code(result) == 0
    assert check("exit_code", result, value=0).passed


def test_exit_code_without_any_shell_call_fails():
    result = ExecutionResult(subtask_id="s1", status="completed", output="42")
    verdict = check("exit_code", result, value=0)
    assert not verdict.passed and "no shell call" in verdict.evidence


def test_output_contains_passes_and_fails():
    assert check("output_contains", HELLO, value="hell").passed
    verdict = check("output_contains", HELLO, value="world")
    assert not verdict.passed and "'world' not found" in verdict.evidence


def test_output_checks_ignore_the_exit_code_line():
    assert output_text("[exit code 0]\nhello\n") == "hello\n"
    assert not check("output_contains", HELLO, value="exit code").passed


def test_output_contains_falls_back_to_tool_evidence():
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="I listed the files.",
        tool_calls=[
            format_evidence("shell", {"command": "ls"}, "[exit code 0]\na.txt")
        ],
    )
    verdict = check("output_contains", result, value="a.txt")
    assert verdict.passed and verdict.evidence.startswith(
        "tool call 1 (shell) contains"
    )


def test_an_output_contains_value_written_as_a_regex_is_read_as_one():
    # A small planner writes "port=([0-9]+)" as the text to contain; the file
    # the executor read says "port = 8437".
    read = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output={"port": 8437},
        tool_calls=[
            format_evidence(
                "read_file", {"path": "/srv/s.ini"}, "host = a\nport = 8437"
            )
        ],
    )
    verdict = check("output_contains", read, value="port=([0-9]+)")
    assert verdict.passed and verdict.evidence.endswith("(the value read as a regex)")
    assert verdict.evidence.startswith("tool call 1 (read_file) matches")
    assert not check("output_contains", read, value=r"workers=\d+").passed
    # A claim that no tool output shows is still refused under the regex.
    claimed = read.model_copy(update={"output": "port=9999", "tool_calls": []})
    assert not check("output_contains", claimed, value="port=([0-9]+)").passed


def test_an_output_contains_value_that_is_plain_text_stays_literal():
    dotted = shell_result("cat notes", "[exit code 0]\nsee a.b for it\n")
    assert not check("output_contains", dotted, value="a[b] (x)").passed
    assert not check("output_contains", dotted, value="see a.c").passed
    assert check("output_contains", dotted, value="a.b").passed


def test_output_matches_passes_and_fails():
    verdict = check("output_matches", HELLO, pattern="hel+o")
    assert verdict.passed and verdict.evidence == "output matches /hel+o/: 'hello'"
    assert check("output_matches", HELLO, pattern="^hello$").passed
    assert not check("output_matches", HELLO, pattern="^bye").passed


def claimed(claim: str, command: str, printed: str) -> ExecutionResult:
    call = format_evidence("shell", {"command": command}, f"[exit code 0]\n{printed}")
    return ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=[call]
    )


@pytest.mark.parametrize("pattern", [".*number.*", "^.*number.*$", ".+integer.+"])
def test_a_placeholder_word_wrapped_in_match_anything_still_asks_for_a_number(
    pattern,
):
    total = claimed("13467", "python3 sum.py payments.csv", "13467")
    assert check("output_matches", total, pattern=pattern).passed
    said = claimed("the sum is computed", "python3 sum.py payments.csv", "done")
    assert not check("output_matches", said, pattern=pattern).passed
    # A wrapped word that names no placeholder keeps its meaning as written.
    assert not check("output_matches", total, pattern=".*ERROR.*").passed


def test_a_pattern_in_script_delimiters_is_read_without_them():
    # As a 1.5B planner wrote it: "/^\d+$/" can never match as written.
    count = shell_result("grep -c . data.txt", "[exit code 0]\n137\n")
    assert check("output_matches", count, pattern="/^\\d+$/").passed
    assert check("output_matches", HELLO, pattern="/^HELLO$/i").passed
    assert not check("output_matches", HELLO, pattern="/^\\d+$/").passed
    # A slash that can match stays a slash.
    assert not check("output_matches", HELLO, pattern="/hello/").passed


def test_output_matches_with_a_bad_regex_fails_clearly():
    verdict = check("output_matches", HELLO, pattern="(")
    assert not verdict.passed
    assert verdict.evidence.startswith("invalid output_matches check: pattern '('")


def test_file_exists_is_relative_to_the_workspace(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out/report.md").write_text("x")
    assert check("file_exists", HELLO, tmp_path, path="out/report.md").passed
    assert check("file_exists", HELLO, tmp_path, path=str(tmp_path / "out")).passed
    verdict = check("file_exists", HELLO, tmp_path, path="out/missing.md")
    assert not verdict.passed and verdict.evidence.startswith("no such file:")


@pytest.mark.parametrize(
    ("output", "path", "value", "passed"),
    [
        ('{"a": {"b": 3}}', "a.b", 3, True),
        ('{"a": {"b": 3}}', "a.b", 4, False),
        ({"items": [{"name": "x"}]}, "items.0.name", "x", True),
        ({"items": []}, "items.0.name", "x", False),
        ('Result:\n```json\n{"ok": true}\n```', "ok", True, True),
    ],
)
def test_json_field_compares_the_value_at_a_dotted_path(output, path, value, passed):
    result = ExecutionResult(subtask_id="s1", status="completed", output=output)
    assert check("json_field", result, path=path, value=value).passed is passed


def test_json_field_without_value_only_needs_the_field():
    result = ExecutionResult(subtask_id="s1", status="completed", output={"a": None})
    assert check("json_field", result, path="a").passed
    assert not check("json_field", result, path="b").passed


# A real run's second attempt: the right count (wc -l printed 58), wrapped under
# the check's type name, against a value R2 wrote as a JSON schema type.
WRAPPED = {"file_exists": True, "output_matches": True, "json_field": {"lines": 58}}


@pytest.mark.parametrize(
    ("output", "value", "passed", "said"),
    [
        (WRAPPED, {"type": "number"}, True, "field 'lines' is a number: 58"),
        ({"lines": "58"}, "number", True, "is a number"),
        ({"lines": 58.0}, "<integer>", True, "is an integer"),
        ({"lines": 2.5}, "integer", False, "is not an integer"),
        ({"lines": "many"}, {"type": "number"}, False, "is not a number"),
        ({"lines": True}, "number", False, "is not a number"),
        ({"result": {"count": 58}}, "number", False, "no field 'lines'"),
        ({"a": {"lines": 1}, "b": {"lines": 2}}, "number", False, "no field"),
        ({"lines": "string"}, "string", True, "equals 'string'"),
    ],
)
def test_json_field_reads_a_type_name_as_a_type_and_finds_a_wrapped_field(
    output, value, passed, said
):
    result = ExecutionResult(subtask_id="s1", status="completed", output=output)
    verdict = check("json_field", result, path="lines", value=value)
    assert verdict.passed is passed and said in verdict.evidence


def test_json_field_on_non_json_output_fails():
    verdict = check("json_field", HELLO, path="a", value=1)
    assert not verdict.passed and verdict.evidence.startswith("the output is not JSON")


def test_missing_or_unknown_parameters_fail_with_a_clear_message():
    assert check("exit_code", HELLO).evidence == (
        "invalid exit_code check: missing parameter 'value'"
    )
    verdict = evaluate_check({"type": "port_open"}, HELLO, workspace=".")
    assert not verdict.passed and "unknown type 'port_open'" in verdict.evidence


SETTINGS = ExecutionResult(
    subtask_id="s1",
    status="completed",
    output="The port is 8437.",
    tool_calls=[
        format_evidence(
            "shell", {"command": "cat conf/settings.ini"}, "[server]\nport = 8437\n"
        )
    ],
)


@pytest.mark.parametrize(
    ("kind", "param"),
    [
        ("output_matches", {"pattern": r"port=\d+"}),
        ("output_matches", {"pattern": r"port\s*:\s*8437"}),
        ("output_contains", {"value": "port=8437"}),
        ("output_contains", {"value": "port:8437"}),
    ],
)
def test_a_key_value_check_passes_whatever_the_spacing_around_the_sign(kind, param):
    verdict = check(kind, SETTINGS, **param)
    assert verdict.passed, verdict.evidence
    assert "tool call 1" in verdict.evidence


@pytest.mark.parametrize(
    ("kind", "param"),
    [
        ("output_matches", {"pattern": r"port=9\d+"}),
        ("output_contains", {"value": "port=8438"}),
        ("output_contains", {"value": "host=8437"}),
    ],
)
def test_a_key_value_check_still_fails_on_another_value_or_key(kind, param):
    assert not check(kind, SETTINGS, **param).passed


def test_a_key_value_claim_passes_only_when_a_tool_shows_it_under_either_spacing():
    shown = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="port=8437",
        tool_calls=SETTINGS.tool_calls,
    )
    invented = shown.model_copy(update={"output": "port=9000"})
    assert check("output_matches", shown, pattern=r"^port=\d+$").passed
    verdict = check("output_matches", invented, pattern=r"^port=\d+$")
    assert not verdict.passed and "no tool output shows it" in verdict.evidence


def test_lookarounds_keep_their_meaning_in_the_second_try():
    verdict = check("output_matches", SETTINGS, pattern=r"(?<=port = )\d+")
    assert verdict.passed and "'8437'" in verdict.evidence
    assert not check("output_matches", SETTINGS, pattern=r"(?<=host = )\d+").passed


@pytest.mark.parametrize("pattern", ["number", " Integer ", "<number>"])
def test_a_pattern_that_names_a_number_matches_a_number(pattern):
    counted = shell_result("wc -l app.log", "[exit code 0]\n58 app.log\n")
    verdict = check("output_matches", counted, pattern=pattern)
    assert verdict.passed and "/\\d+/" in verdict.evidence
    assert not check("output_matches", HELLO, pattern=pattern).passed


@pytest.mark.parametrize("pattern", ["regex", "<pattern>", " Pattern"])
def test_a_pattern_that_names_no_format_is_met_by_any_output_a_tool_shows(pattern):
    counted = shell_result("wc -l app.log", "[exit code 0]\n58 app.log\n")
    counted = counted.model_copy(update={"output": "58"})
    verdict = check("output_matches", counted, pattern=pattern)
    assert verdict.passed and "names no format; output: '58'" in verdict.evidence
    blank = shell_result("true", "[exit code 0]\n").model_copy(update={"output": ""})
    assert not check("output_matches", blank, pattern=pattern).passed


# Any line matches the first four; the last three can never match ("$" before
# a word: a command copied into the check).
@pytest.mark.parametrize(
    "pattern",
    [".*", "^.+$", "(?s).*", "[\\s\\S]*"]
    + ["ls -l $directory | grep -c '.*\\.py'", "${dir}/a.py", "x$files"],
)
def test_a_pattern_that_matches_any_line_or_none_names_no_format(pattern):
    summed = shell_result(
        "awk -F, '{s+=$4} END{print s}' a.csv", "[exit code 0]\n44025\n"
    )
    summed = summed.model_copy(update={"output": "The total of a.csv is 44025."})
    verdict = check("output_matches", summed, pattern=pattern)
    assert verdict.passed and "names no format" in verdict.evidence
    blank = shell_result("true", "[exit code 0]\n").model_copy(update={"output": ""})
    assert not check("output_matches", blank, pattern=pattern).passed


@pytest.mark.parametrize("pattern", ["\\S+", "\\d+", "^[0-9]+(\\.?[0-9]+)?$"])
def test_a_pattern_with_a_format_still_needs_its_match_in_a_tool_output(pattern):
    claimed = shell_result("cat a.csv", "[exit code 0]\nregion,amount\nwest,770\n")
    claimed = claimed.model_copy(update={"output": "44025"})
    assert not check("output_matches", claimed, pattern=pattern).passed


def test_a_word_of_a_request_that_is_no_count_still_needs_a_tool_to_show_it():
    shown = shell_result("cat hello.py", "[exit code 0]\nprint('bye')\n")
    said = shown.model_copy(update={"output": "hello"})
    hello = {"type": "output_contains", "value": "hello"}
    asked = "Create hello.py that prints hello, then run it."
    assert not evaluate_check(hello, said, workspace=".", request=asked).passed
    port = {"type": "output_contains", "value": "8437"}
    claimed = HELLO.model_copy(update={"output": "port 8437"})
    asked = "How many ports are there? Is one 8437?"
    assert not evaluate_check(port, claimed, workspace=".", request=asked).passed


@pytest.mark.parametrize("field", ["a.b", " a.b.0 "])
def test_the_prompts_example_field_names_no_field(field):
    counted = shell_result("wc -l app.log", "[exit code 0]\n58 app.log\n")
    counted = counted.model_copy(update={"output": "58"})
    verdict = check("json_field", counted, path=field, value=58)
    assert verdict.passed and "names no format; output: '58'" in verdict.evidence
    said = counted.model_copy(update={"output": "58 lines"})
    assert check("json_field", said, path=field).passed
    blank = counted.model_copy(update={"output": ""})
    assert not check("json_field", blank, path=field).passed
    assert not check("json_field", counted, path="lines").passed


@pytest.mark.parametrize("pattern", ["^\\d+$", "cost \\$\\d+", "(a|b)$"])
def test_an_end_anchor_or_an_escaped_dollar_is_still_a_format(pattern):
    verdict = check("output_matches", HELLO, pattern=pattern)
    assert "names no format" not in verdict.evidence


def test_a_whole_claim_line_passes_when_a_tool_output_it_quotes_matches():
    # Seen from a 1.5B executor: the claim is a JSON object around the script's
    # output, and ".*hello from artoo.*" takes the whole line, which no tool
    # printed; the script's own output matches and the claim quotes it.
    ran = shell_result("python3 hello.py", "[exit code 0]\nhello from artoo\n")
    wrapped = ran.model_copy(
        update={"output": {"file_exists": True, "output_matches": "hello from artoo"}}
    )
    verdict = check("output_matches", wrapped, pattern=".*hello from artoo.*")
    assert verdict.passed
    assert verdict.evidence == (
        "tool call 1 (shell) matches /.*hello from artoo.*/: 'hello from artoo' "
        "(the claim quotes it)"
    )
    # A claim that states another value than the tool printed still fails.
    counted = shell_result("grep -c x f", "[exit code 0]\ncount: 17\n")
    invented = counted.model_copy(update={"output": "the result is count: 42"})
    verdict = check("output_matches", invented, pattern=r".*count: \d+.*")
    assert not verdict.passed and "no tool output shows it" in verdict.evidence


TRACEBACK = (
    "[exit code 1]\n"
    '  File "/d/hello.py", line 1\n'
    "    print(hello from artoo)\n"
    "                ^^^^\n"
    "SyntaxError: invalid syntax\n"
)


@pytest.mark.parametrize("kind", ["output_matches", "output_contains"])
def test_a_failed_run_whose_traceback_quotes_the_line_does_not_meet_the_check(kind):
    # Seen from a 1.5B executor (make test-model, write-script): echo wrote
    # print(hello from artoo) without its quotes; python3 failed, and its
    # traceback quoted the line, so /hello from artoo/ passed a script that
    # printed nothing.
    crashed = shell_result("python3 /d/hello.py", TRACEBACK)
    crashed = crashed.model_copy(update={"output": "hello.py was created"})
    param = {"pattern": "hello from artoo"} if kind == "output_matches" else {}
    verdict = check(kind, crashed, **(param or {"value": "hello from artoo"}))
    assert not verdict.passed
    # The claim quoting the line is not shown by a tool either.
    quoted = crashed.model_copy(update={"output": "it printed hello from artoo"})
    assert not check(kind, quoted, **(param or {"value": "hello from artoo"})).passed
    # Once the script runs, its output meets the check.
    ran = shell_result("python3 /d/hello.py", "[exit code 0]\nhello from artoo\n")
    assert check(kind, ran, **(param or {"value": "hello from artoo"})).passed


@pytest.mark.parametrize(
    ("command", "output", "pattern", "met"),
    [
        # grep -c finds no line: it prints 0 and exits 1, and 0 is the count.
        ("grep -c ERROR /d/a.log", "[exit code 1]\n0\n", "^0$", True),
        # diff exits 1 and prints the lines that differ.
        ("diff a b", "[exit code 1]\n1c1\n< x\n---\n> y\n", "^< x$", True),
        # A program's own error line names the path it could not read.
        (
            "cat /d/port.txt",
            "[exit code 1]\ncat: /d/port.txt: No such file or directory\n",
            "port",
            False,
        ),
        ("gcc x.c", "[exit code 1]\nx.c:3:5: error: expected ';'\n", "expected", False),
    ],
)
def test_only_a_failed_call_that_reports_its_error_is_left_out(
    command, output, pattern, met
):
    result = shell_result(command, output)
    result = result.model_copy(update={"output": ""})
    assert check("output_matches", result, pattern=pattern).passed is met
