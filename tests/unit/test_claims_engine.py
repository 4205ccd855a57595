"""The claims engine's rule table: ordered, named rows; a verdict names its rule."""

from pathlib import Path

from roles.agent_validator import validate
from roles.claims.engine import Case, Finding, Rule, decide
from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import EVIDENCE_RULES, evidence_finding
from roles.claims.question import Question, question_for
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


SIZE_PRINTERS = [
    "stat -c '%s' /srv/in/notes.md",
    "stat --format=%s /srv/in/notes.md",
    "du -b /srv/in/notes.md | cut -f1",
    "find /srv/in -type f -printf '%s %p\\n' | sort -n | head -1",
]


def test_a_size_is_never_a_count_of_lines_whatever_program_printed_it():
    question = Question(answer="count", count_of="lines")
    asked = "Quante righe ha il file più piccolo in /srv/in?"
    subtask = _subtask(intent=asked)
    for command in SIZE_PRINTERS:
        result = _result("9120", _shell(command, "9120"))
        finding = evidence_finding(subtask, result, asked, question)
        assert finding is not None, command
        assert finding.rule == "counts-other-kind", command
        assert "sizes" in finding.reason and "wc -l FILE" in finding.reason
    lines = _shell("wc -l < /srv/in/notes.md", "311")
    assert evidence_finding(subtask, _result("311", lines), asked, question) is None


def test_a_count_whose_kind_r1_left_empty_takes_it_from_the_counted_noun():
    # R1 stated a count of nothing in particular; the request's words name
    # what is counted after "how many", so a size is still refused.
    asked = "Find the largest file in /srv/logs, then tell me how many rows it has."
    question = question_for(Question(answer="count", subject="largest file"), asked)
    assert question.count_of == "rows"
    sizes = _shell("ls -S /srv/logs | head -1 | xargs du -b", "11652\tapp.log")
    finding = evidence_finding(
        _subtask(intent=asked), _result("11652", sizes), asked, question
    )
    assert finding is not None and finding.rule == "counts-other-kind"
    rows = _shell("wc -l < /srv/logs/app.log", "58")
    assert (
        evidence_finding(_subtask(intent=asked), _result("58", rows), asked, question)
        is None
    )


def test_a_count_that_leaves_lines_out_is_not_one_of_every_line():
    asked = "How many stations are in /srv/st.tsv, not counting the header line?"
    question = question_for(Question(answer="count", count_of="rows"), asked)
    subtask = _subtask(intent=asked)
    for command in ("wc -l /srv/st.tsv", "awk 'END{print NR}' /srv/st.tsv"):
        every = _result("The file has 41 stations.", _shell(command, "41"))
        finding = evidence_finding(subtask, every, asked, question)
        assert finding is not None and finding.rule == "counts-the-excluded", command
        assert "the header line" in finding.reason and "tail -n +2" in finding.reason
    for command in ("tail -n +2 /srv/st.tsv | wc -l", "awk 'NR>1' /srv/st.tsv | wc -l"):
        less = _result("40", _shell(command, "40"))
        assert evidence_finding(subtask, less, asked, question) is None, command
    # Without an exclusion, every line is what a line count is.
    plain = "How many lines are in /srv/st.tsv?"
    every = _result("41", _shell("wc -l /srv/st.tsv", "41"))
    assert evidence_finding(_subtask(intent=plain), every, plain) is None


def test_a_count_of_files_is_judged_at_the_depth_the_request_states():
    top = "How many PDFs sit at the top level of /srv/docs, ignoring subfolders?"
    question = question_for(Question(answer="count", count_of="files"), top)
    assert question.depth == "top"
    subtask = _subtask(intent=top)
    for command in (
        "find /srv/docs -name '*.pdf' | wc -l",
        "ls -R /srv/docs | grep -c '\\.pdf$'",
        "find /srv/docs -maxdepth 3 -type f -name '*.pdf' | wc -l",
    ):
        deep = _result("12", _shell(command, "12"))
        finding = evidence_finding(subtask, deep, top, question)
        assert finding is not None and finding.rule == "counts-at-other-depth", command
        assert "-maxdepth 1" in finding.reason
    for command in (
        "find /srv/docs -maxdepth 1 -type f -name '*.pdf' | wc -l",
        "ls /srv/docs/*.pdf | wc -l",
    ):
        shallow = _result("5", _shell(command, "5"))
        assert evidence_finding(subtask, shallow, top, question) is None, command
    every = "Count every file under /srv/docs, at any depth."
    question = question_for(Question(answer="count"), every)
    assert question.depth == "all"
    listed = _result("5", _shell("ls /srv/docs | wc -l", "5"))
    finding = evidence_finding(_subtask(intent=every), listed, every, question)
    assert finding is not None and finding.rule == "counts-at-other-depth"
    found = _result("12", _shell("find /srv/docs -type f | wc -l", "12"))
    assert evidence_finding(_subtask(intent=every), found, every, question) is None
    # No depth stated: either listing stands.
    plain = "How many files are in /srv/docs?"
    assert question_for(Question(answer="count"), plain).depth == ""
    for listed in (_result("5", _shell("ls /srv/docs | wc -l", "5")), found):
        assert evidence_finding(_subtask(intent=plain), listed, plain) is None


def test_numbers_the_claim_restates_from_the_request_are_not_its_claim():
    asked = "How many deploys in /srv/q/deploy.log ran between 09:00 and 09:30?"
    question = question_for(Question(answer="count"), asked)
    failed_search = _shell("grep -c '09:00-09:30' /srv/q/deploy.log", "0")
    listing = _shell("ls /srv/q | wc -l", "1")
    # The claim's "00" of 09:00 is no count the failed search printed.
    result = _result("1 deploy ran between 09:00 and 09:30.", failed_search, listing)
    finding = evidence_finding(_subtask(intent=asked), result, asked, question)
    assert finding is not None and "the claimed 1 was printed by `ls /srv/q" in (
        finding.reason
    )


def test_a_count_of_rows_or_lines_is_never_a_count_of_files():
    asked = "How many entries does /srv/q/cron.log hold?"
    question = question_for(Question(answer="count"), asked)
    files = _result("1", _shell("find /srv/q -name '*.log' | wc -l", "1"))
    finding = evidence_finding(_subtask(intent=asked), files, asked, question)
    assert finding is not None and finding.rule == "counts-other-kind"
    rows = _result("12", _shell("wc -l < /srv/q/cron.log", "12"))
    assert evidence_finding(_subtask(intent=asked), rows, asked, question) is None


def test_a_files_size_is_no_value_its_data_holds():
    for asked, printer in (
        (
            "What is the highest reading in /srv/m/temps.txt?",
            "find /srv/m/temps.txt -printf '%s %p\\n' | sort -n | tail -1",
        ),
        (
            "Quel est le total des montants dans /srv/m/a.csv ?",
            "stat -c %s /srv/m/a.csv",
        ),
        ("What is the sum of the values in /srv/m/v.txt?", "du -b /srv/m/v.txt"),
    ):
        question = question_for(Question(answer="number"), asked)
        sized = _result("233", _shell(printer, "233 /srv/m/x"))
        finding = evidence_finding(_subtask(intent=asked), sized, asked, question)
        assert finding is not None, asked
        assert finding.rule == "size-for-other-number", asked
    # A size asked is answered by a size.
    for asked in (
        "How big is /srv/m/temps.txt in bytes?",
        "What is the size of the largest file in /srv/m?",
    ):
        sized = _result("233", _shell("stat -c %s /srv/m/temps.txt", "233"))
        question = question_for(Question(answer="number"), asked)
        assert evidence_finding(_subtask(intent=asked), sized, asked, question) is None
    # The data's own value passes.
    asked = "What is the highest reading in /srv/m/temps.txt?"
    read = _result("94", _shell("sort -n /srv/m/temps.txt | tail -1", "94"))
    question = question_for(Question(answer="number"), asked)
    assert evidence_finding(_subtask(intent=asked), read, asked, question) is None


def test_a_count_of_lines_may_be_a_sum_of_counts_or_a_count_of_matches():
    question = Question(answer="count", count_of="lines")
    asked = "How many lines do the two files in /srv/in hold together?"
    summed = _shell("wc -l /srv/in/* | awk '{s+=$1} END{print s}'", "82")
    result = _result("82", summed)
    assert evidence_finding(_subtask(intent=asked), result, asked, question) is None
    words = _shell("wc -w < /srv/in/a", "82")
    finding = evidence_finding(
        _subtask(intent=asked), _result("82", words), asked, question
    )
    assert finding is not None and finding.rule == "counts-other-kind"


def test_a_total_size_asked_is_not_refused_as_a_count():
    asked = "What is the total size in bytes of /srv/in?"
    question = Question(answer="total", subject="size of /srv/in in bytes")
    total = _shell("du -cb /srv/in | tail -1 | cut -f1", "20480")
    result = _result("20480", total)
    assert evidence_finding(_subtask(intent=asked), result, asked, question) is None


def test_what_a_count_counts_is_dropped_from_a_question_that_is_not_a_count():
    asked = "Wie groß sind alle Dateien unter /srv/in zusammen, in Bytes?"
    question = question_for(
        Question(answer="total", count_of="files", matching="bytes"), asked
    )
    assert question.count_of == ""
    assert Question(answer="name", count_of="lines").count_of == ""
    assert Question(answer="number", count_of="lines").count_of == "lines"
    summed = _shell(
        "find /srv/in -type f -printf '%s %p\\n' | awk '{s+=$1} END {print s}'",
        "22144",
    )
    result = _result("22144", summed)
    assert evidence_finding(_subtask(intent=asked), result, asked, question) is None


def test_the_narrower_count_of_the_step_decides_over_the_requests_lines():
    question = Question(answer="count", count_of="lines")
    step = "Count the distinct values of /srv/in/a"
    every = _shell("wc -l < /srv/in/a", "40")
    finding = evidence_finding(
        _subtask(intent=step), _result("40", every), "How many lines?", question
    )
    assert finding is not None and "distinct values" in finding.reason


def test_a_yes_or_no_needs_an_output_that_shows_what_decides_it():
    question = Question(answer="yes_no", subject="compression in /srv/x/server.xml")
    asked = "Ist die Kompression in /srv/x/server.xml eingeschaltet?"
    subtask = _subtask(intent=asked)
    silent = [
        _shell("grep -q compression /srv/x/server.xml && echo yes", "yes"),
        _shell("grep -qi 'compression' /srv/x/server.xml", ""),
        _shell(
            "grep compression /srv/x/server.xml >/dev/null && echo Enabled", "Enabled"
        ),
    ]
    for call in silent:
        finding = evidence_finding(subtask, _result("yes", call), asked, question)
        assert finding is not None and finding.rule == "test-not-shown", call
        assert "grep -n WORD FILE" in finding.reason
    shown = _shell(
        "grep -n compression /srv/x/server.xml", "12:  <compression>off</compression>"
    )
    result = _result("no", silent[0], shown)
    assert evidence_finding(subtask, result, asked, question) is None


def test_a_value_computed_from_the_data_shows_it():
    question = Question(answer="yes_no")
    asked = "Does the sum of /srv/x/a.csv's second column exceed 100?"
    summed = _shell(
        'awk -F, \'{s+=$2} END{if (s>100) print "yes", s; else print "no", s}\' a',
        "yes 131",
    )
    result = _result("yes", summed)
    assert evidence_finding(_subtask(intent=asked), result, asked, question) is None


def test_a_failed_read_shows_nothing_for_a_yes_or_no():
    question = Question(answer="yes_no")
    asked = "Is /srv/x/missing.conf set to verbose?"
    failed = format_evidence(
        "shell",
        {"command": "cat /srv/x/missing.conf"},
        "[exit code 1]\ncat: /srv/x/missing.conf: No such file or directory",
    )
    finding = evidence_finding(
        _subtask(intent=asked), _result("no", failed), asked, question
    )
    assert finding is not None and finding.rule == "test-not-shown"
