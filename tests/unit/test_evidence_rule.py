"""No accept without evidence: the executor's claim is checked against tool output."""

from roles.agent_validator import NO_EVIDENCE_TODO, validate
from roles.claims.evidence import format_evidence
from roles.contracts import Criterion, ExecutionResult, SubTask
from roles.llm.offline import OfflineModel

COUNT = SubTask(
    subtask_id="s1",
    parent_task_id="t1",
    intent="count the lines of data.txt",
    success_criteria=[
        Criterion(
            criterion="the line count is reported",
            check={"type": "output_matches", "pattern": r"\d+"},
        ),
        Criterion(criterion="it is the number of lines of data.txt"),
    ],
)


def judged(result: ExecutionResult, tmp_path, attempt: int = 1):
    return validate(
        COUNT,
        result,
        model=OfflineModel(),
        attempt=attempt,
        trajectory=[],
        workspace=tmp_path,
    )


def result(output, *calls) -> ExecutionResult:
    return ExecutionResult(
        subtask_id="s1", status="completed", output=output, tool_calls=list(calls)
    )


def wc(shown: str) -> str:
    return format_evidence("shell", {"command": "wc -l data.txt"}, shown)


def test_a_claim_without_any_tool_call_fails_every_verifiable_criterion(tmp_path):
    validation = judged(result("636"), tmp_path)
    assert validation.verdict == "retry"
    assert [v.verdict for v in validation.verdicts] == ["fail", "fail"]
    assert {v.failure_class for v in validation.verdicts} == {"environmental"}
    assert all("no tool was called" in v.evidence for v in validation.verdicts)
    assert validation.correction.what_to_do == NO_EVIDENCE_TODO


def test_on_the_last_attempt_it_fails_the_subtask(tmp_path):
    validation = judged(result("636"), tmp_path, attempt=2)
    assert validation.verdict == "failed"
    assert validation.outcome.status == "failed"


def test_only_failed_calls_are_no_evidence_either(tmp_path):
    refused = format_evidence("read_file", {"path": "/etc/x"}, "ERROR: outside")
    validation = judged(result("636", refused), tmp_path)
    assert all("no tool call succeeded" in v.evidence for v in validation.verdicts)


def test_a_value_that_no_tool_output_shows_fails_the_check(tmp_path):
    validation = judged(result("636", wc("[exit code 0]\n42 data.txt")), tmp_path)
    check = validation.verdicts[0]
    assert check.verdict == "fail"
    assert "no tool output shows" in check.evidence


def test_a_value_a_tool_output_shows_passes(tmp_path):
    validation = judged(result("42", wc("[exit code 0]\n42 data.txt")), tmp_path)
    assert validation.verdict == "matched"


def test_a_value_shown_deep_in_a_long_tool_output_passes(tmp_path):
    # grep -c over a listing: the count stands after 600 characters of paths.
    listing = "\n".join(f"/srv/data/file-{n:04}.txt" for n in range(25))
    shown = wc(f"[exit code 0]\n{listing}\n4213 total")
    validation = judged(result("4213", shown), tmp_path)
    assert validation.verdict == "matched"


def test_a_command_that_failed_is_still_evidence_of_what_happened(tmp_path):
    shown = wc("[exit code 1]\nwc: data.txt: No such file or directory")
    validation = judged(result("no such file", shown), tmp_path)
    assert "not evidence" not in validation.verdicts[1].evidence


def outcome(output: str, *calls: str):
    from roles.contracts import SubTaskOutcome

    return SubTaskOutcome(
        subtask_id="s1",
        parent_task_id="t1",
        status="matched",
        output=output,
        tool_calls=list(calls),
    )


def test_a_merge_that_states_only_shown_facts_is_kept():
    from roles.claims.merged import grounded

    shown = outcome("42", wc("[exit code 0]\n42 data.txt"))
    assert grounded("data.txt has 42 lines", [shown]) == "data.txt has 42 lines"


def test_a_merge_that_invents_a_fact_gives_way_to_the_subtasks_outputs():
    from roles.claims.merged import grounded

    shown = outcome("b.py", format_evidence("shell", {"command": "grep -l x"}, "b.py"))
    assert grounded("parse_config.py defines it (636 lines)", [shown]) == "b.py"


def test_the_summary_names_its_evidence_and_skips_failed_calls():
    from roles.claims.merged import evidence_note

    refused = format_evidence("read_file", {"path": "/x"}, "ERROR: outside")
    shown = outcome("42", refused, wc("[exit code 0]\n42 data.txt"))
    assert evidence_note([shown]) == "Evidence: shell `wc -l data.txt`."


def test_the_evidence_names_a_long_command_by_its_programs_not_a_broken_copy():
    from roles.claims.merged import evidence_note
    from roles.ggs.megrams import terminal_content

    command = "awk -F, 'NR>1 {s+=$3} END {print s}' " + "/data/" + "d" * 120 + ".csv"
    summed = format_evidence("shell", {"command": command}, "[exit code 0]\n44025")
    shown = outcome("44025", summed)
    note = "Evidence: shell:awk (a long command, not kept)."
    assert evidence_note([shown]) == note
    content = terminal_content("accept", [shown])
    assert content == "Succeeded. Worked: shell:awk (a long command, not kept) → 44025."
    assert "…" not in content


def test_the_evidence_leaves_out_a_command_that_exited_non_zero():
    from roles.claims.merged import evidence_note

    missing = format_evidence(
        "shell", {"command": "xsv count f.csv"}, "[exit code 127]\nxsv: not found"
    )
    counted = format_evidence(
        "shell", {"command": "grep -c error: app.log"}, "[exit code 0]\n3"
    )
    shown = outcome("3", missing, counted)
    assert evidence_note([shown]) == "Evidence: shell `grep -c error: app.log`."


def test_a_number_the_claim_states_must_stand_whole_in_a_tool_output(tmp_path):
    # "24" is inside "2024-05-03" of the log, but the log never says 24.
    log = format_evidence("read_file", {"path": "app.log"}, "2024-05-03 INFO ok")
    validation = judged(result("24", log), tmp_path)
    assert validation.verdicts[0].verdict == "fail"
    assert "no tool output shows" in validation.verdicts[0].evidence


def test_a_validators_met_may_not_rest_on_the_claim():
    from roles.agent_validator_judge import UNQUOTED, _from_answer
    from roles.agent_validator_prompts import CriterionResult

    # As seen with a 1.5B model: the quote shares the path with the tool output,
    # but most of it is the executor's claim.
    shown = "[exit code 0]\n/var/tmp/artoo-model-tasks/t/error-count/app.log"
    criterion = Criterion(criterion="the count is stated")
    claim = CriterionResult(
        criterion="the count is stated",
        met=True,
        evidence="There are [exit code 0] lines in the file "
        "/var/tmp/artoo-model-tasks/t/error-count/app.log that contain the word ERROR.",
    )
    quoted = claim.model_copy(
        update={"evidence": "/var/tmp/artoo-model-tasks/t/error-count/app.log"}
    )
    said = claim.evidence
    assert _from_answer(criterion, claim, shown, said).verdict == "fail"
    assert UNQUOTED in _from_answer(criterion, claim, shown, said).evidence
    assert _from_answer(criterion, quoted, shown, said).verdict == "pass"
    paraphrase = claim.model_copy(update={"evidence": "grep listed the log"})
    assert _from_answer(criterion, paraphrase, shown, said).verdict == "pass"
    plausible = criterion.model_copy(update={"mode": "plausible"})
    assert _from_answer(plausible, claim, shown, said).verdict == "pass"


def test_a_merged_number_inside_a_longer_one_is_not_grounded():
    from roles.claims.merged import grounded

    shown = outcome("see log", format_evidence("read_file", {"path": "a"}, "2024"))
    assert grounded("24 lines", [shown]) == "see log"


# A model endpoint that is never asked: every criterion here has a machine check.
CHECKS_ONLY = object()
LAST_TRY = {"model": CHECKS_ONLY, "attempt": 2, "trajectory": []}


def test_a_claim_stating_a_number_no_tool_showed_fails_even_when_a_check_passes(
    tmp_path,
):
    # As seen with a 1.5B model: awk printed 0 (the check matched that), and the
    # executor reported an invented total.
    sums = SubTask(
        subtask_id="s1",
        parent_task_id="t1",
        intent="sum the amount column of sales.csv",
        success_criteria=[
            Criterion(
                criterion="a number is printed",
                check={"type": "output_matches", "pattern": r"^(\d+)$"},
            )
        ],
    )
    awk = format_evidence("shell", {"command": "awk -F, '{t+=$2} END {print t}'"}, "0")
    claim = result("The total of the amount column is 123456.", awk)
    validation = validate(
        sums, claim, model=CHECKS_ONLY, attempt=2, trajectory=[], workspace=tmp_path
    )
    assert validation.verdict == "failed"
    assert "'123456'" in validation.verdicts[0].evidence


def test_a_criterion_that_is_only_a_checks_name_is_left_out(tmp_path):
    # As a 1.5B planner wrote it: "output_matches" beside a real criterion.
    subtask = COUNT.model_copy(
        update={"success_criteria": ["output_matches", *COUNT.success_criteria]}
    )
    validation = validate(
        subtask,
        result("42", wc("[exit code 0]\n42 data.txt")),
        model=OfflineModel(),
        attempt=1,
        trajectory=[],
        workspace=tmp_path,
    )
    assert [v.criterion for v in validation.verdicts] == [
        c.criterion for c in COUNT.success_criteria
    ]
    assert validation.verdict == "matched"


def inheriting(result: ExecutionResult, inherited: list[str], tmp_path):
    return validate(
        COUNT,
        result,
        model=OfflineModel(),
        attempt=2,
        trajectory=[],
        workspace=tmp_path,
        inherited=inherited,
    )


def test_a_claim_built_on_an_earlier_groups_evidence_passes(tmp_path):
    # Sequence 2 reports what sequence 1's matched call showed, calling nothing.
    earlier = [wc("[exit code 0]\n42 data.txt")]
    validation = inheriting(result("42"), earlier, tmp_path)
    assert validation.verdict == "matched"


def test_a_number_the_earlier_evidence_does_not_show_still_fails(tmp_path):
    earlier = [wc("[exit code 0]\n42 data.txt")]
    validation = inheriting(result("636"), earlier, tmp_path)
    assert validation.verdict == "failed"
    assert "'636'" in validation.verdicts[0].evidence
    assert "not evidence" in validation.verdicts[0].evidence


def test_inherited_calls_that_all_failed_are_no_evidence(tmp_path):
    refused = format_evidence("read_file", {"path": "/etc/x"}, "ERROR: outside")
    validation = inheriting(result("42"), [refused], tmp_path)
    assert all("no tool call succeeded" in v.evidence for v in validation.verdicts)


def echo(text: str) -> str:
    return format_evidence(
        "shell", {"command": f"echo {text}"}, f"[exit code 0]\n{text}"
    )


def llm_judged(claim: str, *calls: str, request: str = ""):
    from roles.agent_validator_judge import judge

    criteria = [Criterion(criterion="a count", check={"type": "exit_code", "value": 0})]
    outcome = ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=list(calls)
    )
    return judge(COUNT, outcome, criteria, object(), "/tmp", None, (), request)


def test_echoing_the_claim_is_not_evidence():
    judged = llm_judged("42", echo("42"))
    assert (
        "only echo or printf of the claim itself was run" in judged.verdicts[0].evidence
    )
    assert judged.verdicts[0].verdict == "fail"


def test_an_echo_beside_a_real_call_leaves_the_real_evidence():
    judged = llm_judged("42", wc("[exit code 0]\n42 data.txt"), echo("42"))
    assert judged.verdicts[0].verdict == "pass"


def test_an_echo_the_request_asks_for_is_the_work_itself():
    judged = llm_judged("hello", echo("hello"), request="run echo hello")
    assert judged.verdicts[0].verdict == "pass"


def test_an_echo_into_a_file_or_of_a_variable_is_a_real_command():
    from roles.claims.evidence import only_echoes

    assert only_echoes(echo("42"))
    for command in ("echo 42 > out.txt", "echo $HOME", "printf '%s' `date`"):
        entry = format_evidence("shell", {"command": command}, "[exit code 0]\n")
        assert not only_echoes(entry), command


def test_text_in_single_quotes_is_literal_to_the_echo_rule():
    from roles.claims.evidence import only_echoes

    said = "echo '[exit code 0] The function `greet_json` returns the greeting.'"
    for command in (said, "printf 'a | b; c $x\\n'"):
        entry = format_evidence("shell", {"command": command}, "[exit code 0]\n")
        assert only_echoes(entry), command
    for command in ("echo 'a' | wc -c", "echo 'x' `date`", 'echo "`date`"'):
        entry = format_evidence("shell", {"command": command}, "[exit code 0]\n")
        assert not only_echoes(entry), command


def test_an_echoed_claim_with_backticks_in_quotes_is_not_evidence():
    claim = "The function `greet_json` returns the expected greeting message."
    call = format_evidence(
        "shell", {"command": f"echo '[exit code 0] {claim}'"}, f"[exit code 0]\n{claim}"
    )
    judged = llm_judged(claim, call)
    assert judged.verdicts[0].verdict == "fail"
    assert "only echo or printf" in judged.verdicts[0].evidence


def test_a_met_that_quotes_a_claim_whose_number_a_tool_printed_stands():
    from roles.agent_validator_judge import UNQUOTED, _from_answer
    from roles.agent_validator_prompts import CriterionResult

    # denied-copy, second pass (5a50abf8): awk printed 10, the claim said 10,
    # and the model's "met" quoted the claim; the right answer was failed.
    shown = "[exit code 0]\n10\n"
    criterion = Criterion(criterion="The output counts the filtered items.")
    said = "The count is a number. The number is 10."
    met = CriterionResult(criterion=criterion.criterion, met=True, evidence=said)
    assert _from_answer(criterion, met, shown, said).verdict == "pass"
    # A number no tool printed, or none at all, still needs a tool's words.
    for claim in ("The number is 11.", "The count is stated in the output."):
        quote = met.model_copy(update={"evidence": claim})
        verdict = _from_answer(criterion, quote, shown, claim)
        assert verdict.verdict == "fail" and UNQUOTED in verdict.evidence
    # The exit code line is not a number a tool printed.
    zero = met.model_copy(update={"evidence": "The command exited 0 as expected."})
    verdict = _from_answer(criterion, zero, "[exit code 0]\n", zero.evidence)
    assert verdict.verdict == "fail"


def test_a_files_length_does_not_pass_a_number_check_of_a_file_count(tmp_path):
    # Round 1 of a real run: GGS had blocked wc, the executor counted the lines
    # of one of the 17 files with grep -c, and "^[0-9]+$" passed on "1".
    project = "/srv/count-py/project"
    number = {"type": "output_matches", "pattern": "^[0-9]+$"}
    count = COUNT.model_copy(
        update={
            "intent": "Find Python files in the specified directory",
            "success_criteria": [Criterion(criterion="a number", check=number)],
        }
    )
    blocked = format_evidence(
        "shell",
        {"command": f"wc -l {project}/tests/test_orders.py"},
        "ERROR: blocked by GGS: the program 'wc' was used in a subtask that failed",
    )
    lines = format_evidence(
        "shell",
        {"command": f"grep -c '' {project}/tests/test_orders.py"},
        "[exit code 0]\n1",
    )
    asked = f"How many Python files are there under {project}?"
    validation = validate(
        count, result(1, blocked, lines), **LAST_TRY, workspace=tmp_path, request=asked
    )
    assert validation.verdict == "failed"
    assert (
        "counts the lines inside the files it names" in validation.verdicts[0].evidence
    )
