"""A claim resting on one computation is derived again by another means.

The cases are the false accepts the special rules were written for (a line
count given for a count of distinct values, a count that missed a file's last
line), judged here by the general check alone: a second derivation that
disagrees fails the claim, whichever special rule would have named it.
"""

from __future__ import annotations

from roles.agent_validator import validate
from roles.claims.evidence import format_evidence
from roles.claims.question import Question
from roles.claims.rederive import (
    UNCONFIRMED,
    agreement,
    computed_kinds,
    first_derivation,
    rederive,
    second_subtask,
)
from roles.contracts import ExecutionResult, SubTask
from roles.executor import Execution
from roles.fastloop import run_fast_loop
from roles.llm.offline import OfflineModel

DISTINCT = "How many different client IP addresses appear in /d/web.log?"
COUNT = Question(answer="count", count_of="distinct", subject="client IPs")
SUBTASK = SubTask(subtask_id="s1", parent_task_id="t", intent=DISTINCT)


def result(claim: str, *calls: tuple[str, str], status="completed") -> ExecutionResult:
    entries = [
        format_evidence("shell", {"command": c}, f"[exit code 0]\n{out}")
        for c, out in calls
    ]
    return ExecutionResult(
        subtask_id="s1", status=status, output=claim, tool_calls=entries
    )


def test_a_number_resting_on_one_program_is_a_derivation_to_check():
    first = first_derivation(
        COUNT, result("240", ("wc -l /d/web.log", "240 /d/web.log"))
    )
    assert first is not None
    assert (first.kind, first.value, first.programs) == ("number", "240", ("shell:wc",))
    assert first.command == first.target == "wc -l /d/web.log"


def test_nothing_to_check_without_one_value_or_with_two_means_already():
    # Two programs printed the same number: it is derived twice already.
    twice = result(
        "17", ("sort -u ips | wc -l", "17"), ("awk '!s[$1]++' ips | wc -l", "17")
    )
    assert first_derivation(COUNT, twice) is None
    # Two numbers claimed, or one no tool printed: nothing to re-derive.
    assert first_derivation(COUNT, result("17 of 240", ("wc -l f", "17\n240"))) is None
    assert first_derivation(COUNT, result("18", ("wc -l f", "17"))) is None
    # A question of free text, or a claim of failure.
    assert (
        first_derivation(Question(answer="text"), result("17", ("wc -l f", "17")))
        is None
    )
    failed = result("17", ("wc -l f", "17"), status="failed")
    assert first_derivation(COUNT, failed) is None


def test_an_uncertain_answer_that_states_a_value_is_derived_again_too():
    unsure = result("240", ("wc -l /d/web.log", "240 /d/web.log"), status="uncertain")
    first = first_derivation(COUNT, unsure)
    assert first is not None and first.value == "240"


def test_the_second_subtask_asks_the_request_blind_to_the_first_answer():
    first = first_derivation(
        COUNT, result("240", ("wc -l /d/web.log", "240 /d/web.log"))
    )
    second = second_subtask(SUBTASK, first, DISTINCT)
    assert second.intent == DISTINCT and second.subtask_id == "s1"
    assert "wc (in the shell)" in second.context
    assert "web.log" not in second.context and "240" not in second.context


def test_the_second_subtask_lists_no_way_of_the_first_derivations_programs():
    files = "How many Python files are under /d/p?"
    first = first_derivation(
        Question(answer="count", count_of="files"),
        result("17", ("find /d/p -type f -name '*.py' | wc -l", "17")),
    )
    second = second_subtask(SUBTASK, first, files, "count", "files")
    [criterion] = second.success_criteria
    assert "ls -R DIR" in str(criterion) and "find DIR" not in str(criterion)


def test_two_derivations_that_disagree_fail_the_claim_with_both_results():
    first = first_derivation(
        COUNT, result("240", ("wc -l /d/web.log", "240 /d/web.log"))
    )
    again = result("17", ("cut -d' ' -f1 /d/web.log | sort -u | wc -l", "17"))
    verdict = agreement(first, again)
    assert verdict.verdict == "fail" and verdict.failure_class == "logical"
    assert verdict.rule == "re-derived"
    assert "`wc -l /d/web.log` gave 240" in verdict.evidence
    assert "sort -u | wc -l` gave 17" in verdict.evidence


def test_two_derivations_that_agree_pass_and_name_both():
    # wc -l counts newlines: a file whose last line has none is one short, and
    # a second program that counts lines says so.
    first = first_derivation(COUNT, result("137", ("grep -c '' /d/a.txt", "137")))
    verdict = agreement(first, result("137.", ("awk 'END {print NR}' /d/a.txt", "137")))
    assert verdict.verdict == "pass" and "both give 137" in verdict.evidence
    short = first_derivation(COUNT, result("136", ("wc -l < /d/a.txt", "136")))
    assert (
        agreement(short, result("137", ("grep -c '' /d/a.txt", "137"))).verdict
        == "fail"
    )


def test_a_second_derivation_that_shows_nothing_or_the_same_means_confirms_nothing():
    # A real run: wc -l printed the right 137, and the second try, wc blocked,
    # found nothing; failing it turned a right answer into an abandon.
    first = first_derivation(COUNT, result("17", ("sort -u ips | wc -l", "17")))
    for again in (
        result("I could not do it", status="failed"),
        result("No accounts use it."),
        result("17", ("echo hi", "hi")),  # a number no tool showed
        result("17", ("sort -u ips | wc -l -", "17")),  # the same programs
    ):
        verdict = agreement(first, again)
        assert verdict.verdict == "pass" and verdict.rule == "re-derivation-unconfirmed"
        # Strict, it fails, as an environmental failure: nothing refuted the
        # approach, and GGS is to keep its tools.
        strict = agreement(first, again, strict=True)
        assert strict.verdict == "fail" and strict.failure_class == "environmental"
        assert strict.rule == "re-derivation-unconfirmed"


def test_another_value_by_the_same_programs_still_disagrees():
    where = Question(answer="path")
    asked = "Which module under /d/src defines parse_row?"
    first = first_derivation(
        where,
        result("/d/src/rows.py", ("grep -rl 'def parse_row' /d/src", "/d/src/rows.py")),
        asked,
    )
    again = result(
        "/d/src/io/csvread.py", ("grep -rln parse_row /d/src", "/d/src/io/csvread.py")
    )
    verdict = agreement(first, again, asked)
    assert verdict.verdict == "fail" and verdict.rule == "re-derived"
    assert "csvread.py" in verdict.evidence and "rows.py" in verdict.evidence
    # The same value by the same programs is still no confirmation.
    same = result("/d/src/rows.py", ("grep -rl parse_row /d/src", "/d/src/rows.py"))
    assert agreement(first, same, asked).rule == "re-derivation-unconfirmed"


def test_a_second_derivation_that_stopped_is_judged_by_what_it_computed():
    lines = Question(answer="count", count_of="lines", subject="largest file")
    first = first_derivation(
        lines, result("11652", ("du -b /d/logs/app.log", "11652\t/d/logs/app.log"))
    )
    kinds = computed_kinds(lines)
    # It ran out of turns with no answer, but its last count printed one.
    stopped = result(
        "",
        ("ls -S /d/logs", "app.log\nworker.log"),
        ("wc -l /d/logs/app.log", "58 /d/logs/app.log"),
        status="failed",
    )
    verdict = agreement(first, stopped, computes=kinds)
    assert verdict.verdict == "fail" and verdict.rule == "re-derived"
    assert "`wc -l /d/logs/app.log` gave 58" in verdict.evidence
    # A command that computes another kind than the one asked is no result.
    sizes = result("", ("stat -c %s /d/logs/app.log", "9000"), status="failed")
    assert agreement(first, sizes, computes=kinds).rule == UNCONFIRMED
    # Nor is one by the first derivation's own programs, or a listing.
    again = result("", ("du -sb /d/logs/app.log", "9000"), status="failed")
    assert agreement(first, again).rule == UNCONFIRMED
    listing = result("", ("cat /d/logs/app.log", "58 lines"), status="failed")
    assert agreement(first, listing, computes=kinds).rule == UNCONFIRMED
    # When it agrees, the claim stands.
    right = first_derivation(lines, result("58", ("wc -l /d/logs/app.log", "58")))
    count = result("", ("grep -c '' /d/logs/app.log", "58"), status="failed")
    assert agreement(right, count, computes=kinds).verdict == "pass"


def test_what_computes_an_answer_is_what_the_question_asks():
    assert "size" not in computed_kinds(Question(answer="count"))
    assert computed_kinds(Question(answer="count", count_of="words")) == ("words",)
    assert computed_kinds(Question(answer="total")) == ("sum", "average")
    assert computed_kinds(Question(answer="number")) == ()


def test_paths_and_names_are_compared_as_what_they_name():
    where = Question(answer="path")
    first = first_derivation(
        where,
        result(
            "It is /srv/src/catalog.py",
            ("grep -rl sku /srv/src", "/srv/src/catalog.py"),
        ),
    )
    assert first is not None and first.kind == "path"
    same = result(
        "catalog.py", ("find /srv/src -name '*.py' -newer x", "/srv/src/catalog.py")
    )
    assert agreement(first, same).verdict == "pass"
    name = Question(answer="name")
    first = first_derivation(
        name,
        result("electra", ("sort -k2 -g latency.txt | tail -1", "electra 480.2 ms")),
        "Which host is the slowest?",
    )
    assert first is not None and first.value == "electra"
    other = result("deneb", ("awk '$2>m{m=$2;h=$1} END{print h}' latency.txt", "deneb"))
    assert agreement(first, other, "Which host is the slowest?").verdict == "fail"


def test_the_fast_loop_retries_a_disagreement_and_matches_an_agreement(tmp_path):
    answers = iter(["240", "17"])

    def execute_fn(correction, attempt):
        claim = next(answers)
        command = "wc -l /d/web.log" if claim == "240" else "sort -u ips | wc -l"
        return Execution(result(claim, (command, claim)), None, [])

    def validate_fn(res, attempt, trajectory):
        return validate(
            SUBTASK, res, model=OfflineModel(), attempt=attempt,
            trajectory=trajectory, workspace=tmp_path,
        )  # fmt: skip

    seconds = iter(["17", "17"])

    def derive_again(second, blocked):
        claim = next(seconds)
        return Execution(result(claim, ("awk '!s[$1]++' ips | wc -l", claim)), None, [])

    corrections = []
    outcome, executions, _ = run_fast_loop(
        SUBTASK,
        execute_fn=execute_fn,
        validate_fn=validate_fn,
        on_correction=lambda c, v: corrections.append(c),
        rederive_fn=lambda res: rederive(SUBTASK, res, COUNT, DISTINCT, derive_again),
    )
    assert outcome.status == "matched" and len(executions) == 2
    assert "two derivations disagree" in corrections[0].what_was_wrong
    assert outcome.criteria_verdicts[-1].rule == "re-derived"


def test_names_are_compared_as_sets_and_a_yes_or_no_as_its_word():
    request = "Which users made more than 3 requests according to /d/access.log?"
    names = Question(answer="names")
    log = "user=alice\nuser=farid\nuser=bruno"
    first = first_derivation(
        names, result("alice and farid", ("awk … /d/access.log", log)), request
    )
    assert first is not None and first.value == "alice, farid"
    same = result("farid, alice", ("grep -c … /d/access.log", "farid 5\nalice 4"))
    assert agreement(first, same, request).verdict == "pass"
    more = result(
        "alice, bruno, farid", ("sort … | uniq -c", "alice 4\nbruno 2\nfarid 5")
    )
    assert agreement(first, more, request).verdict == "fail"

    asked = "Is debug logging turned on in /d/settings.json?"
    yes_no = Question(answer="yes_no")
    first = first_derivation(
        yes_no,
        result("No, it is off.", ("grep debug /d/settings.json", '"debug": false')),
        asked,
    )
    assert first is not None and (first.value, first.programs) == (
        "no",
        ("shell:grep",),
    )
    again = result("false: no", ("python3 -c …", "False"))
    assert agreement(first, again, asked).verdict == "pass"
    assert agreement(first, result("Yes", ("jq …", "true")), asked).verdict == "fail"
    # A yes or no with no call behind it is nothing to derive again.
    assert first_derivation(yes_no, result("No"), asked) is None


def test_a_second_answer_the_rules_of_evidence_refuse_confirms_nothing():
    # A real run: the second derivation counted every line of passwd again
    # and "agreed" with a first count that had done the same.
    asked = "How many accounts in /d/passwd use /bin/bash as their login shell?"
    question = Question(answer="count")
    sub = SubTask(subtask_id="s1", parent_task_id="t", intent=asked)
    first = result("7", ("grep -c bash /d/passwd", "7"))

    def again(second, blocked):
        assert blocked == ("grep -c bash /d/passwd",)
        every = result("7", ("awk 'NR<8' /d/passwd | wc -l", "7"))
        return Execution(every, None, [])

    verdict = rederive(sub, first, question, asked, again, strict=True)
    assert verdict.verdict == "fail" and verdict.rule == "re-derivation-unconfirmed"
    assert "does not look for '/bin/bash'" in verdict.evidence
    assert rederive(sub, first, question, asked, again).verdict == "pass"


def test_an_uncertain_second_derivation_that_states_a_value_is_compared():
    asked = "Does /d/requirements.txt pin an exact version of requests?"
    yes_no = Question(answer="yes_no")
    first = first_derivation(
        yes_no,
        result(
            "Yes, it has requests>=2.31", ("cat /d/requirements.txt", "requests>=2.31")
        ),
        asked,
    )
    again = result(
        "It is not pinned.", ("grep requests /d/requirements.txt", "requests>=2.31")
    )
    again = again.model_copy(update={"status": "uncertain"})
    assert agreement(first, again, asked).rule == "re-derived"
    assert agreement(first, again, asked).verdict == "fail"


def test_a_yes_or_no_that_a_second_derivation_did_not_confirm_fails():
    asked = "Is compression switched on in /d/nginx.conf?"
    yes_no = Question(answer="yes_no")
    read = ("cat /d/nginx.conf", "gzip off;\nlisten 80;")
    first = first_derivation(yes_no, result("Yes", read), asked)
    for again in (
        result("I could not tell", status="failed"),
        result("3", ("echo 3", "3")),
    ):
        verdict = agreement(first, again, asked)
        assert verdict.verdict == "fail" and verdict.rule == "re-derivation-unconfirmed"
        assert verdict.failure_class == "environmental"
    # A number's unconfirmed second derivation still passes (see above).
    count = first_derivation(COUNT, result("17", ("sort -u ips | wc -l", "17")))
    assert agreement(count, result("I could not do it", status="failed")).verdict == (
        "pass"
    )


def test_names_picked_out_of_a_longer_output_need_a_second_derivation():
    names = Question(answer="names")
    asked = "Which accounts in /d/passwd use zsh?"
    passwd = "ann:x:1:1::/home/ann:/bin/zsh\nbob:x:2:2::/:/bin/sh\ncy:x:3:3::/:/bin/zsh"
    read = result("ann and cy", ("cat /d/passwd", passwd))
    picked = first_derivation(names, read, asked)
    assert picked is not None and picked.read_off
    nothing = ExecutionResult(subtask_id="s1", status="failed", output="")
    verdict = agreement(picked, nothing, asked)
    assert (verdict.verdict, verdict.rule) == ("fail", UNCONFIRMED)
    # Printed alone by a command that selected them: a tool's value.
    selected = result(
        "ann and cy", ("awk -F: '$7 ~ /zsh/ {print $1}' /d/passwd", "ann\ncy")
    )
    printed = first_derivation(names, selected, asked)
    assert printed is not None and not printed.read_off
    assert agreement(printed, nothing, asked).verdict == "pass"
    # Two derivations agreeing by other means confirm picked names too.
    again = result("ann, cy", ("grep -E 'zsh$' /d/passwd | cut -d: -f1", "ann\ncy"))
    assert agreement(picked, again, asked).verdict == "pass"
