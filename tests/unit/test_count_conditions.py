"""A count under a condition the request states is computed by a command that
selects by it.

The request states the condition in literal form: a quoted text, a word in
capitals, a path that is no file the command reads, a time. A number printed
by commands that count every line, none looking for any of it, is refused.
"""

from __future__ import annotations

import pytest

from roles.claims.question_words import stated_conditions
from tests.unit.test_aggregate import judged, shell

BASH = "How many accounts in /d/passwd use /bin/bash as their login shell?"
WINDOW = "How many entries of /d/cron.log were logged between 10:00 and 10:59?"
TODO = "How many TODO comments are there in the Python files in /d/src?"


def test_the_conditions_a_count_question_states_are_read_in_literal_form():
    assert stated_conditions(BASH) == ["/d/passwd", "/bin/bash"]
    assert stated_conditions(WINDOW) == ["/d/cron.log", "10:00", "10:59"]
    assert stated_conditions(TODO) == ["TODO", "/d/src"]
    assert stated_conditions('How many lines of a.log contain "time out"?') == [
        "time out"
    ]
    # A file's own name is no condition, and a request that counts nothing has none.
    assert stated_conditions("How many lines does /d/README.md have?") == [
        "/d/README.md"
    ]
    assert stated_conditions("Which users use /bin/bash in /d/passwd?") == []


@pytest.mark.parametrize(
    ("request_text", "command", "printed"),
    [
        # A real false accept: wc -l over passwd, and a second derivation that
        # counted every line again, for the accounts that use /bin/bash.
        (BASH, "wc -l /d/passwd", "31 /d/passwd"),
        (BASH, "awk '{print $1}' /d/passwd | sort -u | wc -l", "31"),
        (WINDOW, "wc -l < /d/cron.log", "70"),
        (TODO, "cat /d/src/*.py | wc -l", "96"),
    ],
)
def test_a_count_of_every_line_is_refused_under_a_stated_condition(
    request_text, command, printed
):
    claim = printed.split()[0]
    reason = judged("count", claim, shell(command, printed), request=request_text)
    assert "does not look for" in reason and "count only those" in reason


@pytest.mark.parametrize(
    ("request_text", "command", "printed"),
    [
        (BASH, "grep -c '/bin/bash$' /d/passwd", "7"),
        (BASH, "awk -F: '$7==\"/bin/bash\"' /d/passwd | wc -l", "7"),
        (BASH, "grep -c bash /d/passwd", "7"),
        (WINDOW, "grep -c ' 10:' /d/cron.log", "12"),
        (TODO, "grep -r TODO /d/src --include='*.py' | wc -l", "9"),
        # One path says where to count: it is no condition.
        ("How many lines does /d/README.md have?", "wc -l < /d/README.md", "40"),
        ("How many lines are in /d/notes.txt?", "cd /d && wc -l < notes.txt", "40"),
    ],
)
def test_a_count_by_a_command_that_selects_by_the_condition_stands(
    request_text, command, printed
):
    claim = printed.split()[0]
    assert judged("count", claim, shell(command, printed), request=request_text) == ""
