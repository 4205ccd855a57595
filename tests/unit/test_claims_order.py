"""An extreme asked by one key and answered off an order by another.

``order_asked`` reads which extreme a request asks for (the newest, the
largest, the most lines, the highest value) and ``order`` which key a command
orders entries by; the rules ``other-order-key`` and ``other-order-end``
(``roles.claims.evidence_rules``) refuse an entry picked off another key's
order, or off the other end of the right one.
"""

import pytest

from roles.claims.command import parse_command
from roles.claims.command_queries import Order, order
from roles.claims.question import Question, read_question
from roles.claims.question_words import order_asked
from tests.unit.claim_cases import finding, shell

# Four drops whose orders by size, by time, by lines and by name all differ.
BY_SIZE = "\n".join(["9120 /srv/drops/zeta.csv", "4410 /srv/drops/kappa.csv"])
BY_TIME = "mu.csv\nkappa.csv\nzeta.csv\nalpha.csv"
NEWEST = "Which file in /srv/drops changed most recently?"


def _finding(request, claim, *calls, answer="path"):
    return finding(
        request, claim, *calls, question=Question(answer=answer, subject=request)
    )


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        (NEWEST, ("modified", "max")),
        ("Which of the drafts in /srv/drafts was saved last?", ("modified", "max")),
        ("What is the oldest one under /srv/drops?", ("modified", "min")),
        ("the least recently touched file in /tmp/x", ("modified", "min")),
        ("Which file has the most recent modification time?", ("modified", "max")),
        ("Which file in /srv was opened most recently?", ("accessed", "max")),
        ("Find the biggest file in /srv/media, subfolders too.", ("size", "max")),
        ("Which is the smallest non-empty file in /srv/x?", ("size", "min")),
        ("Which file takes up the most disk space?", ("size", "max")),
        ("Which of the logs has the fewest lines?", ("lines", "min")),
        ("Which node in /srv/nodes has the most cores?", ("content", "max")),
        ("Which route has the lowest latency?", ("content", "min")),
        ("the page with the largest number of links", ("content", "max")),
        ("Which job had the highest number of retries?", ("content", "max")),
        ("Which name comes last alphabetically?", ("name", "max")),
        # A key the words leave open, or no extreme at all.
        ("What is the latest release?", ("", "")),
        ("Which is the biggest order?", ("", "")),
        ("Which user logged in most recently?", ("", "")),
        ("List the files with at most 3 lines.", ("", "")),
        ("What is the last line of /srv/app.log?", ("", "")),
        ("How many files are in /srv/drops?", ("", "")),
    ],
)
def test_the_extreme_a_request_asks_for_is_a_key_and_an_end(text, asked):
    assert order_asked(text) == asked
    assert (read_question(text).order_key, read_question(text).order_end) == asked


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -t /srv/drops | head -1", Order("modified", True, "first")),
        ("ls -ltr /srv/drops", Order("modified", False)),
        ("ls -1t /srv/drops | head -n1", Order("modified", True, "first")),
        ("ls -S /srv/drops | tail -n 1", Order("size", True, "last")),
        ("ls --sort=size -r /srv/drops", Order("size", False)),
        ("ls /srv/drops", Order("name", False)),
        ("find /d -printf '%T@ %p\\n' | sort -nr | head -1",
         Order("modified", True, "first")),
        ("find /srv -type f -printf '%p %s\\n' | sort -k2 -n", Order("size", False)),
        ("stat -c '%Y %n' /srv/drops/* | sort -k1,1nr", Order("modified", True)),
        ("du -a /srv | sort -n | tail -2", Order("size", False, "last")),
        ("wc -l /srv/logs/* | sort -n | tac | head -3", Order("lines", True, "first")),
        ("ls -l /srv/drops | awk '{print $5, $9}' | sort -n", Order("size", False)),
        ("ls -l /srv/drops | grep -v '^d' | sort -k5,5n", Order("size", False)),
        ("grep -H cores /srv/nodes/* | sort -k2 -n", Order("content", False)),
        ("sort -t, -k3 -n /srv/nodes.csv | tail -1", Order("content", False, "last")),
        ("ls -lt /srv/drops | tail -n +2", Order("modified", True)),
        ("ls -t /srv/drops | sed -n 1p", Order("modified", True)),
        ("ls -S /srv/drops | cut -c1-40 | head -1", Order("size", True, "first")),
        ("ls -t /srv/drops | xargs wc -l", None),
        ("ls -U /srv/drops | head -1", None),
        ("find /srv/drops -type f | head -1", None),
        ("find /srv -printf '%s %p\\n' | awk '$1 > 10' | sort -n", None),
    ],
)  # fmt: skip
def test_a_command_orders_entries_by_the_key_of_its_sorted_field(command, expected):
    *_, last = parse_command(command).pipelines
    assert order(last) == expected


def test_the_newest_answered_off_an_order_by_size_is_refused():
    size = "find /srv/drops -type f -printf '%s %p\\n' | sort -rn | head -2"
    finding = _finding(NEWEST, "/srv/drops/zeta.csv", shell(size, BY_SIZE))
    assert finding is not None and finding.rule == "other-order-key"
    assert "ls -t" in finding.reason and "size" in finding.reason


def test_the_newest_answered_off_a_plain_listing_is_refused():
    names = "alpha.csv\nkappa.csv\nmu.csv\nzeta.csv"
    finding = _finding(NEWEST, "zeta.csv", shell("ls /srv/drops", names))
    assert finding is not None and finding.rule == "other-order-key"


def test_a_listing_in_name_order_is_no_choice_when_the_key_was_printed():
    long = (
        "-rw-r--r-- 1 ann ann 4410 Mar  3 09:12 alpha.csv\n"
        "-rw-r--r-- 1 ann ann 9120 Mar  1 17:40 zeta.csv"
    )
    assert _finding(NEWEST, "alpha.csv", shell("ls -l /srv/drops", long)) is None
    asked = "Which node in /srv/nodes has the most cores?"
    listing = shell("ls /srv/nodes", "core-2.yaml\nedge-7.yaml")
    read = shell("cat /srv/nodes/core-2.yaml", "cores: 64")
    assert _finding(asked, "core-2", listing, read, answer="name") is None
    assert _finding(asked, "core-2", listing, answer="name") is not None


def test_the_newest_answered_off_an_order_by_time_stands():
    time = shell("ls -t /srv/drops", BY_TIME)
    assert _finding(NEWEST, "The newest is mu.csv.", time) is None
    # An order by size beside it changes nothing: the time was ordered too.
    size = shell("find /srv/drops -printf '%s %p\\n' | sort -rn", BY_SIZE)
    assert _finding(NEWEST, "mu.csv", size, time) is None


def test_the_other_end_of_the_right_order_is_refused():
    time = shell("ls -t /srv/drops", BY_TIME)
    oldest = "Which file in /srv/drops is the oldest?"
    finding = _finding(oldest, "mu.csv", time)
    assert finding is not None and finding.rule == "other-order-end"
    assert "newest" in finding.reason
    assert _finding(oldest, "alpha.csv", time) is None
    reversed_ = shell("ls -tr /srv/drops | head -1", "alpha.csv")
    assert _finding(oldest, "alpha.csv", reversed_) is None


def test_a_value_the_files_hold_is_not_read_off_their_size():
    asked = "Which node in /srv/nodes has the most cores?"
    size = shell("ls -S /srv/nodes | head -1", "edge-7.yaml")
    finding = _finding(asked, "edge-7", size, answer="name")
    assert finding is not None and finding.rule == "other-order-key"
    values = shell(
        "grep -H cores /srv/nodes/* | sort -k2 -n | tail -1",
        "/srv/nodes/core-2.yaml:cores: 64",
    )
    assert _finding(asked, "core-2", size, values, answer="name") is None


def test_the_most_lines_read_off_a_line_count_stands_and_off_size_does_not():
    asked = "Which log in /srv/logs has the most lines?"
    counts = "120 /srv/logs/api.log\n2210 /srv/logs/db.log\n2330 total"
    lines = shell("wc -l /srv/logs/* | sort -n", counts)
    assert _finding(asked, "db.log", lines) is None
    size = shell("ls -S /srv/logs | head -1", "api.log")
    finding = _finding(asked, "api.log", size)
    assert finding is not None and finding.rule == "other-order-key"


def test_an_answer_that_is_no_end_of_the_order_or_no_extreme_asked_stands():
    size = shell("find /srv/drops -printf '%s %p\\n' | sort -rn", BY_SIZE)
    # A number states no entry; a question of no extreme has no key.
    assert _finding(NEWEST, "4410 bytes", size, answer="number") is None
    plain = "Which file in /srv/drops is a CSV export?"
    assert _finding(plain, "zeta.csv", size) is None
    # The entry the claim names sits at neither end of the order.
    middle = shell("ls -S /srv/drops", "zeta.csv\nkappa.csv\nmu.csv")
    assert _finding(NEWEST, "kappa.csv", middle) is None
