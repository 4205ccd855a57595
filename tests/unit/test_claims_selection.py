"""A request for some entries answered with every entry a listing showed.

The rule ``every-entry-named`` (``roles.claims.evidence_rules``) refuses an
answer that selected nothing; ``restricting_words`` reads whether a request
restricts the entries it asks for, and ``lists_every_entry`` whether a
command tested anything of what it listed.
"""

import pytest

from roles.claims.command import parse_command
from roles.claims.command_queries import lists_every_entry
from roles.claims.evidence import format_evidence
from roles.claims.question import Question
from roles.claims.question_words import restricting_words
from roles.contracts import ExecutionResult, SubTask
from tests.unit.claim_cases import finding, shell

SIZES = {"alpha.log": 120, "beta.log": 0, "gamma.log": 3400, "delta.log": 0}
LONG = "total 8\n" + "\n".join(
    f"-rw-r--r-- 1 ann staff {size:>5} Mar  1 10:00 {name}"
    for name, size in SIZES.items()
)
PLAIN = "\n".join(SIZES)
EVERY = ", ".join(SIZES)


def _finding(request, claim, *calls, subject=""):
    question = Question(answer="names", subject=subject)
    return finding(request, claim, *calls, question=question)


@pytest.mark.parametrize(
    ("text", "restricts"),
    [
        ("List the empty files in /srv/logs.", True),
        ("Which files under /srv/logs are older than a week?", True),
        ("Which accounts in /etc/passwd cannot log in?", True),
        ("zero-byte logs", True),
        ("What files are in /srv/logs?", False),
        ("List the files and directories in the logs folder", False),
        ("Which users are there in /etc/passwd?", False),
        ("Could you please show me everything in /srv/logs?", False),
        ("files in logs", False),
    ],
)
def test_a_request_restricts_its_entries_when_it_says_more_than_their_kind(
    text, restricts
):
    assert bool(restricting_words(text)) is restricts


@pytest.mark.parametrize(
    ("command", "lists"),
    [
        ("ls /srv/logs", True),
        ("cd /srv && ls -la logs | awk '{print $9}'", True),
        ("ls -l /srv/logs | grep '^-'", True),
        ("find /srv/logs -maxdepth 1 -type f | sort", True),
        ("cut -d: -f1 /etc/passwd", True),
        ("ls /srv/logs/*", True),
        ("wc -c /srv/logs/*", True),
        ("stat -c '%s %n' /srv/logs/* | sort -n", True),
        ("wc -l /srv/logs/*.log", False),
        ("wc -l /srv/logs/app.log", False),
        ("find /srv/logs -type f -size 0", False),
        ("find /srv/logs -newer /srv/stamp", False),
        ("ls /srv/logs/*.gz", False),
        ("ls -l /srv/logs | awk '$5 > 100 {print $9}'", False),
        ("grep -L . /srv/logs/*", False),
        ("for f in /srv/logs/*; do test -s $f || echo $f; done", False),
        ("ls /srv/logs | head -2", False),
        ("python3 -c 'import os; print(os.listdir(\"/srv/logs\"))'", False),
    ],
)
def test_a_listing_tests_nothing_but_an_entrys_kind(command, lists):
    assert lists_every_entry(parse_command(command)) is lists


def test_every_listed_entry_for_some_of_them_is_refused_naming_the_listing():
    request = "Which logs in /srv/logs are empty?"
    for command, output in (("ls -l /srv/logs", LONG), ("ls /srv/logs", PLAIN)):
        finding = _finding(request, EVERY, shell(command, output))
        assert finding is not None and finding.rule == "every-entry-named"
        assert f"`{command}`" in finding.reason and "4 entries" in finding.reason


def test_sizes_of_every_file_are_a_listing_too():
    sizes = "\n".join(f"{size} /srv/logs/{name}" for name, size in SIZES.items())
    listed = shell("wc -c /srv/logs/*", sizes + "\n3520 total")
    finding = _finding("Which logs in /srv/logs are empty?", EVERY, listed)
    assert finding is not None and "4 entries" in finding.reason


def test_the_entries_a_test_selected_are_not_refused():
    request = "Which logs in /srv/logs are empty?"
    found = shell("find /srv/logs -type f -empty", "beta.log\ndelta.log")
    listed = shell("ls -l /srv/logs", LONG)
    assert _finding(request, "beta.log, delta.log", listed, found) is None
    # A subset read off a long listing selected something: this rule is silent.
    assert _finding(request, "beta.log and delta.log", listed) is None


def test_every_entry_stands_when_a_test_printed_every_one_too():
    request = "Which logs in /srv/logs are readable by everyone?"
    listed = shell("ls -l /srv/logs", LONG)
    tested = shell("find /srv/logs -type f -perm -o=r", PLAIN)
    assert _finding(request, EVERY, listed, tested) is None


def test_a_file_read_beside_the_listing_tests_nothing():
    listed = shell("ls /srv/logs", PLAIN)
    read = format_evidence("read_file", {"path": "/srv/logs/index"}, PLAIN)
    finding = _finding("Which logs in /srv/logs are empty?", EVERY, listed, read)
    assert finding is not None and finding.rule == "every-entry-named"


def test_every_entry_is_the_answer_when_every_entry_is_asked():
    listed = shell("ls /srv/logs", PLAIN)
    assert _finding("What files are in /srv/logs?", EVERY, listed) is None
    assert _finding("List /srv/logs.", EVERY, listed) is None


def test_r1s_subject_decides_over_the_words_when_it_states_one():
    listed = shell("ls /srv/logs", PLAIN)
    chatty = "Hey there, what have we got sitting in /srv/logs right now?"
    assert _finding(chatty, EVERY, listed, subject="files in /srv/logs") is None
    finding = _finding(
        "Quels journaux sont vides dans /srv/logs ?",
        EVERY,
        listed,
        subject="empty log files",
    )
    assert finding is not None and finding.rule == "every-entry-named"


def test_every_record_of_a_file_for_some_of_them_is_refused():
    passwd = "ann:x:1000:1000::/home/ann:/bin/bash\nbob:x:1001:1001::/:/bin/false"
    passwd += "\ncy:x:1002:1002::/home/cy:/bin/zsh"
    request = "Which accounts in /etc/passwd use zsh or bash?"
    cut = shell("cut -d: -f1 /etc/passwd", "ann\nbob\ncy")
    finding = _finding(request, "ann, bob, cy", cut)
    assert finding is not None and finding.rule == "every-entry-named"
    picked = shell("awk -F: '$7 ~ /(zsh|bash)$/ {print $1}' /etc/passwd", "ann\ncy")
    assert _finding(request, "ann, cy", cut, picked) is None
    assert _finding(request, "ann, cy", shell("cat /etc/passwd", passwd)) is None


def test_a_glob_of_every_name_is_a_listing_and_a_glob_of_some_is_a_test():
    request = "Which of the files in /srv/logs are logs?"
    every = format_evidence(
        "glob", {"pattern": "*", "root": "/srv/logs"}, "logs/a.log\nlogs/b.log"
    )
    some = format_evidence(
        "glob", {"pattern": "*.log", "root": "/srv/logs"}, "logs/a.log\nlogs/b.log"
    )
    assert _finding(request, "a.log, b.log", every).rule == "every-entry-named"
    assert _finding(request, "a.log, b.log", every, some) is None


def test_r4a_refuses_the_unselected_answer_on_the_run(tmp_path):
    from roles.agent_validator import validate

    request = "Which logs in /srv/logs are empty?"
    subtask = SubTask(
        subtask_id="s1",
        parent_task_id="t1",
        intent=request,
        success_criteria=["the answer names them"],
    )
    listed = shell("ls -l /srv/logs | grep -v '^d'", LONG)
    result = ExecutionResult(
        subtask_id="s1", status="completed", output=EVERY, tool_calls=[listed]
    )
    validation = validate(
        subtask,
        result,
        model=None,
        attempt=2,
        trajectory=[],
        workspace=tmp_path,
        request=request,
        question=Question(answer="names", subject="empty log files"),
    )
    assert validation.verdict == "failed"
    assert [v.rule for v in validation.verdicts] == ["every-entry-named"]
