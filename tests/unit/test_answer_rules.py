"""R4b's answer rules: the form the Question asks for and the effect it names."""

from pathlib import Path

import pytest

from roles.claims.answer_rules import subtask_effect, unanswered_question
from roles.claims.evidence import format_evidence
from roles.claims.question import Question, question_for
from roles.contracts import ExecutionResult, SubTask, SubTaskOutcome
from roles.tools import ToolError


def _shell(command, output, code=0):
    return format_evidence(
        "shell", {"command": command}, f"[exit code {code}]\n{output}"
    )


def _outcome(answer, *calls):
    return SubTaskOutcome(
        subtask_id="s1",
        parent_task_id="t1",
        status="matched",
        output=answer,
        tool_calls=list(calls),
    )


def _rules(question, answer, *calls, request="the request"):
    verdicts = unanswered_question(question, request, [_outcome(answer, *calls)])
    return [v.rule for v in verdicts]


WHO = _shell("cut -d: -f1 /srv/people | sort -u", "amara\nbogdan\nchen")


def test_names_asked_and_a_count_answered_is_refused():
    counted = _shell("wc -l < /srv/people", "240")
    assert _rules(Question(answer="names"), "240", counted) == ["names-not-stated"]


def test_names_a_tool_showed_are_an_answer():
    assert _rules(Question(answer="names"), "amara, bogdan and chen", WHO) == []


def test_names_no_tool_showed_are_refused():
    rules = _rules(Question(answer="names"), "dmitri and erin", WHO)
    assert rules == ["names-not-stated"]


def test_a_count_needs_a_number():
    assert _rules(Question(answer="count"), "several", WHO) == ["number-not-stated"]
    assert _rules(Question(answer="count"), "3", WHO) == []


def test_a_path_asked_needs_one_a_tool_showed():
    listed = _shell("ls -t /srv/b", "b-0412.tar\nb-0301.tar")
    assert _rules(Question(answer="path"), "b-0412.tar", listed) == []
    assert _rules(Question(answer="path"), "the newest one", listed) == [
        "path-not-stated"
    ]


@pytest.mark.parametrize(
    ("answer", "rules"), [("No.", []), ("maybe", ["yes-no-not-stated"])]
)
def test_a_yes_no_question_needs_yes_or_no(answer, rules):
    assert _rules(Question(answer="yes_no"), answer, WHO) == rules


def test_a_file_to_write_that_no_call_wrote_is_refused(tmp_path: Path):
    target = tmp_path / "report.txt"
    asked = Question(answer="effect", effect="write", paths=[str(target)])
    counted = _shell("wc -l /srv/a.log", "12 /srv/a.log")
    assert _rules(asked, "The report: 12 lines", counted) == ["effect-not-shown"]


def test_a_file_a_call_wrote_and_that_exists_meets_the_effect(tmp_path: Path):
    target = tmp_path / "report.txt"
    target.write_text("12\n")
    asked = Question(answer="effect", effect="write", paths=[str(target)])
    wrote = _shell(f"wc -l < /srv/a.log > {target}", "")
    assert _rules(asked, "written", wrote) == []


def test_a_written_file_that_is_gone_again_is_refused(tmp_path: Path):
    target = tmp_path / "report.txt"
    asked = Question(answer="effect", effect="create", paths=[str(target)])
    wrote = format_evidence("write_file", {"path": str(target), "content": "x"}, "ok")
    assert _rules(asked, "done", wrote) == ["effect-not-shown"]


def test_a_script_that_was_written_and_run_writes_what_it_names(tmp_path: Path):
    target = tmp_path / "out.csv"
    target.write_text("a\n")
    asked = Question(answer="effect", effect="write", paths=[str(target)])
    script = format_evidence(
        "write_file",
        {"path": "/w/make.py", "content": f"open('{target}', 'w').write('a')"},
        "ok",
    )
    ran = _shell("python3 make.py", "")
    assert _rules(asked, "done", script, ran) == []


def test_a_failed_write_does_not_count(tmp_path: Path):
    target = tmp_path / "r.txt"
    asked = Question(answer="effect", effect="write", paths=[str(target)])
    failed = _shell(f"echo x > {target}", "Permission denied", code=1)
    assert _rules(asked, "done", failed) == ["effect-not-shown"]


def test_the_step_that_makes_the_effect_fails_without_it(tmp_path: Path):
    target = str(tmp_path / "users.txt")
    asked = Question(answer="effect", effect="write", paths=[target])
    subtask = SubTask(
        subtask_id="s1", parent_task_id="t1", intent=f"Write the users to {target}"
    )
    result = ExecutionResult(
        subtask_id="s1", status="completed", output="amara", tool_calls=[WHO]
    )
    verdicts = subtask_effect(subtask, result, asked)
    assert [v.rule for v in verdicts] == ["effect-not-shown"]
    reading = subtask.model_copy(update={"intent": "List the users in /srv/people"})
    assert subtask_effect(reading, result, asked) == []


def test_an_entrys_own_name_is_its_path_in_the_directory_the_request_names(tmp_path):
    from roles.claims.answer_rules import Answer, path_stated
    from roles.claims.evidence import format_evidence
    from roles.claims.question import Question

    (tmp_path / "projects" / "beta").mkdir(parents=True)
    request = f"Which directory in {tmp_path}/projects holds the most files?"
    listed = format_evidence(
        "shell", {"command": "ls"}, "[exit code 0]\n9 beta\n4 alpha"
    )
    asked = Question(answer="path")
    assert path_stated(Answer(asked, request, ["beta"], [listed])) == ""
    # A name no entry has, or one no tool showed, is no path.
    assert path_stated(Answer(asked, request, ["gamma"], [listed]))
    assert path_stated(Answer(asked, request, ["beta"], []))


def test_the_requests_own_directory_restated_is_no_path_answered(tmp_path):
    # A real false accept: "which directory in …/projects holds the most
    # files?" answered with …/projects itself.
    from roles.claims.answer_rules import Answer, path_stated
    from roles.claims.evidence import format_evidence
    from roles.claims.question import Question

    (tmp_path / "projects" / "beta").mkdir(parents=True)
    request = f"Which directory in {tmp_path}/projects holds the most files?"
    listed = format_evidence(
        "shell", {"command": "ls -R"}, f"[exit code 0]\n{tmp_path}/projects:\nbeta"
    )
    asked = Question(answer="path")
    for restated in (f"{tmp_path}/projects", f"{tmp_path}/projects/", str(tmp_path)):
        assert path_stated(Answer(asked, request, [restated], [listed]))
    assert path_stated(Answer(asked, request, [f"{tmp_path}/projects/beta"], [])) == ""


def test_a_directory_asked_and_a_file_answered_is_refused(tmp_path: Path):
    (tmp_path / "beta").mkdir()
    (tmp_path / "gamma").mkdir()
    (tmp_path / "gamma" / "big.txt").write_text("x" * 99)
    request = f"Welcher Ordner, which folder in {tmp_path} has the newest entries?"
    question = question_for(Question(answer="path"), request)
    assert question.path_kind == "directory"
    listed = _shell(
        f"ls -lt {tmp_path}/*", f"{tmp_path}/gamma/big.txt\n{tmp_path}/beta"
    )
    file = f"{tmp_path}/gamma/big.txt"
    rules = _rules(question, file, listed, request=request)
    assert rules == ["path-of-other-kind"]
    assert _rules(question, f"{tmp_path}/beta", listed, request=request) == []
    # A file asked and a file answered; no kind stated, either stands.
    which_file = f"Which file under {tmp_path} is the largest?"
    asked = question_for(Question(answer="path"), which_file)
    assert asked.path_kind == "file"
    assert _rules(asked, file, listed, request=which_file) == []
    assert _rules(asked, f"{tmp_path}/beta", listed, request=which_file) == [
        "path-of-other-kind"
    ]
    plain = f"Where is the biggest thing in {tmp_path}?"
    assert question_for(Question(answer="path"), plain).path_kind == ""


def test_an_in_place_edit_that_leaves_the_stated_value_in_the_file_is_shown(
    tmp_path: Path,
):
    from roles.claims.answer_rules import edit_shown
    from roles.tools import Toolbox

    conf = tmp_path / "app.yaml"
    conf.write_text("name: shop\ntimeout: 10\nretries: 2\n")
    request = f"Change the timeout in {conf} to 45 seconds."
    question = question_for(Question(answer="value"), request)
    assert (question.answer, question.effect) == ("effect", "change")
    box = Toolbox(tmp_path, approve=lambda ask: True)
    with pytest.raises(ToolError):
        box.call("apply_edit", {"path": str(conf), "old": "timeout=10", "new": "x"})
    box.call(
        "apply_edit", {"path": str(conf), "old": "timeout: 10", "new": "timeout: 45"}
    )
    intent = f"Set the timeout in {conf} to 45"
    assert "'45'" in edit_shown(question, intent, request, box.evidence)
    # The wrong value, a whole-file write, or no value stated: left to the reading.
    wrong = Toolbox(tmp_path, approve=lambda ask: True)
    wrong.call(
        "apply_edit", {"path": str(conf), "old": "timeout: 45", "new": "timeout: 4"}
    )
    assert edit_shown(question, intent, request, wrong.evidence) == ""
    whole = Toolbox(tmp_path, approve=lambda ask: True)
    whole.call("write_file", {"path": str(conf), "content": "timeout: 45\n"})
    assert edit_shown(question, intent, request, whole.evidence) == ""
    vague = f"Tidy up {conf}."
    assert edit_shown(question_for(None, vague), intent, vague, box.evidence) == ""


def test_a_path_a_call_only_printed_back_from_its_arguments_is_not_shown():
    searched = format_evidence(
        "glob",
        {"pattern": "**/parse_rows.py", "root": "/srv/app"},
        "(no files matched pattern **/parse_rows.py under /srv/app; lines that "
        "hold 'parse_rows': /srv/app/io/reader.py:12: def parse_rows(f):)",
    )
    question = Question(answer="path")
    assert _rules(question, "/parse_rows.py", searched) == ["path-not-stated"]
    assert _rules(question, "/srv/app/io/reader.py", searched) == []
    listed = format_evidence(
        "glob", {"pattern": "*.py", "root": "/srv/app"}, "/srv/app/main.py"
    )
    assert _rules(question, "/srv/app/main.py", listed) == []


@pytest.mark.parametrize(
    ("calls", "rules"),
    [
        # Only reads: a refused edit, a read, a search.
        (
            [
                _shell("sed -i 's/a/b/' greet.py", "Operation not permitted", code=1),
                format_evidence("read_file", {"path": "greet.py"}, "print('hi')"),
                _shell("grep -n argparse greet.py | head -3", ""),
            ],
            ["effect-not-shown"],
        ),
        ([_shell("find . -name '*.py' -exec sed -i s/a/b/ {} +", "")], []),
        ([_shell("sed -i 's/a/b/' greet.py", "")], []),
        ([format_evidence("apply_edit", {"path": "greet.py"}, "ok")], []),
        # A program not known to only read may have written (a script run, git).
        ([_shell("python3 tools/fix.py", "")], []),
        ([_shell("git mv a.py b.py", "")], []),
    ],
)
def test_an_effect_on_no_named_path_needs_a_call_that_may_write(calls, rules):
    asked = Question(answer="effect", effect="change")
    assert _rules(asked, "The --json flag is added.", *calls) == rules
