"""The claims engine's rule table: ordered, named rows; a verdict names its rule."""

from pathlib import Path

from roles.agent_validator import validate
from roles.claims.engine import Case, Finding, Rule, decide
from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import EVIDENCE_RULES, evidence_finding
from roles.claims.question import Question
from roles.contracts import ExecutionResult, SubTask


def _subtask(intent="Count the lines of /srv/a.log", criteria=None):
    return SubTask(
        subtask_id="s1",
        parent_task_id="t1",
        intent=intent,
        success_criteria=criteria or ["the answer is the line count"],
    )


def _result(claim, *calls):
    return ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=list(calls)
    )


def _shell(command, output):
    return format_evidence("shell", {"command": command}, f"[exit code 0]\n{output}")


def test_rule_names_are_unique_and_every_row_has_a_docstring():
    names = [rule.name for rule in EVIDENCE_RULES]
    assert len(names) == len(set(names))
    assert all(rule.check.__doc__ for rule in EVIDENCE_RULES)


def test_the_first_failing_row_decides():
    case = Case(_subtask(), _result("x"), Question())
    rules = (
        Rule("passes", lambda c: ""),
        Rule("first", lambda c: "first reason"),
        Rule("second", lambda c: "second reason"),
    )
    assert decide(case, rules) == Finding("first", "first reason")
    assert decide(case, rules[:1]) is None


def test_an_invented_number_is_refused_by_a_named_rule():
    result = _result("The file has 412 lines.", _shell("head -3 /srv/a.log", "a\nb\nc"))
    finding = evidence_finding(_subtask(), result, "How many lines in /srv/a.log?")
    assert finding is not None and finding.rule == "unshown-fact"
    assert "412" in finding.reason


def test_a_number_read_from_a_listing_is_not_a_computed_count():
    listing = _shell("cat /srv/a.log", "id 12\nid 9\nid 7")
    finding = evidence_finding(
        _subtask(), _result("There are 12 lines.", listing), "How many lines?"
    )
    assert finding is not None and finding.rule == "read-not-computed"


def test_a_computed_count_passes_every_row():
    counted = _shell("wc -l < /srv/a.log", "3")
    finding = evidence_finding(
        _subtask(), _result("3", counted), "How many lines are in /srv/a.log?"
    )
    assert finding is None


def test_the_question_r1_stated_is_used_instead_of_the_words():
    # The words ask nothing a rule of counts reads; R1 said it is a count.
    listing = _shell("cat /srv/a.log", "id 12\nid 9\nid 7")
    subtask = _subtask(intent="Report on /srv/a.log")
    request = "Report the size of /srv/a.log in lines"
    assert evidence_finding(subtask, _result("12", listing), request) is None
    asked = Question(answer="count", count_of="lines")
    finding = evidence_finding(subtask, _result("12", listing), request, asked)
    assert finding is not None and finding.rule == "read-not-computed"


def test_the_verdict_on_the_run_carries_the_rule(tmp_path: Path):
    result = _result("The file has 412 lines.", _shell("head -1 /srv/a.log", "a"))
    validation = validate(
        _subtask(),
        result,
        model=None,
        attempt=2,
        trajectory=[],
        workspace=tmp_path,
        request="How many lines in /srv/a.log?",
    )
    assert validation.verdict == "failed"
    assert [v.rule for v in validation.verdicts] == ["unshown-fact"]


def test_a_count_of_distinct_values_is_not_a_count_of_lines():
    asked = "How many different colours are listed in /srv/paint.txt?"
    every = _shell("wc -l < /srv/paint.txt", "40")
    finding = evidence_finding(_subtask(intent=asked), _result("40", every), asked)
    assert finding is not None and finding.rule == "counts-other-kind"
    assert "distinct values" in finding.reason
    distinct = _shell("sort -u /srv/paint.txt | wc -l", "6")
    assert (
        evidence_finding(_subtask(intent=asked), _result("6", distinct), asked) is None
    )


def test_the_kind_counted_comes_from_the_question_whatever_its_words():
    # Words a regex would not read as "distinct"; R1 stated what is counted.
    asked = "Combien de couleurs y a-t-il dans /srv/paint.txt ?"
    question = Question(answer="count", count_of="distinct")
    every = _shell("wc -l < /srv/paint.txt", "40")
    subtask = _subtask(intent=asked)
    finding = evidence_finding(subtask, _result("40", every), asked, question)
    assert finding is not None and finding.rule == "counts-other-kind"


def test_wcs_total_line_is_not_the_count_of_one_file():
    asked = "Find the biggest file in /srv/logs, then tell me how many lines it has."
    many = _shell(
        "find /srv/logs -type f -exec wc -l {} + | sort -nr | head -n 1", "  405 total"
    )
    finding = evidence_finding(_subtask(intent=asked), _result("405", many), asked)
    assert finding is not None and finding.rule == "total-of-many"
    one = _shell("wc -l < /srv/logs/b.log", "211")
    assert evidence_finding(_subtask(intent=asked), _result("211", one), asked) is None


def test_wcs_total_line_listed_whole_is_the_total_over_the_files():
    asked = "How many lines do the files in /srv/logs have?"
    listing = " 194 /srv/logs/a.log\n 211 /srv/logs/b.log\n 405 total"
    many = _shell("wc -l /srv/logs/*", listing)
    assert evidence_finding(_subtask(intent=asked), _result("405", many), asked) is None
