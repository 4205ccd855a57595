"""The Question: R1's structured statement of what a request asks, and the
reading of a request's words when R1 gave none."""

import pytest

from roles.claims.answer_rules import unmade_effect
from roles.claims.evidence import ToolCall
from roles.claims.question import (
    Question,
    change_asked,
    question_for,
    read_question,
)
from roles.perceiver import PerceiverReply


@pytest.mark.parametrize(
    ("request_text", "answer", "count_of"),
    [
        ("How many lines does /srv/app.log have?", "count", "lines"),
        ("How many unique visitors are in /srv/visits.txt?", "count", "distinct"),
        ("How many .py files are under /srv/code?", "count", "files"),
        ("How many lines of /srv/app.log contain 'WARN'?", "count", "matches"),
        ("Open /srv/notes.txt and tell me how many lines it has.", "count", "lines"),
        ("What is the number of records in /srv/people.csv?", "count", "rows"),
        ("Count the words of /srv/essay.md.", "count", "words"),
        ("How many users have 10 lines or more in /srv/u.txt?", "count", ""),
        ("What is the total of the price column in /srv/items.csv?", "total", ""),
        ("Is compression enabled in /etc/web.conf?", "yes_no", ""),
        ("Which hosts appear in /srv/inventory.txt?", "names", ""),
        ("Which file under /srv/docs is the largest?", "path", ""),
        ("What is worker_count in /etc/pool.toml?", "value", ""),
        ("Summarise /srv/notes.md in one paragraph.", "text", ""),
    ],
)
def test_the_words_of_a_request_give_its_answer_kind(request_text, answer, count_of):
    question = read_question(request_text)
    assert (question.answer, question.count_of) == (answer, count_of)
    assert question.source == "text"


def test_a_request_for_an_effect_names_its_paths():
    question = read_question("Save the list of users to /srv/out/users.txt.")
    assert (question.answer, question.effect) == ("effect", "write")
    assert question.paths == ["/srv/out/users.txt"]


def test_a_question_about_a_file_is_not_an_effect_on_it():
    question = read_question("How many rows would I remove from /srv/a.csv?")
    assert question.answer == "count"


def test_r1s_question_wins_and_keeps_only_the_paths_the_request_holds():
    stated = Question(answer="effect", effect="write", paths=["/a/x", "/b/invented"])
    kept = question_for(stated, "write the report to /a/x")
    assert kept.paths == ["/a/x"] and kept.source == "model"
    assert question_for(None, "How many lines in /a/x?").answer == "count"


@pytest.mark.parametrize(
    ("given", "answer"),
    [
        ("Yes/No", "yes_no"),
        ("how many", "count"),
        ("File path", "path"),
        ("sum", "total"),
    ],
)
def test_r1s_spelling_of_an_answer_kind_is_understood(given, answer):
    assert Question.model_validate({"answer": given}).answer == answer


@pytest.mark.parametrize("asks", ["count", {"answer": "poem"}, ["x"], 7])
def test_an_unusable_asks_never_refuses_the_spec(asks):
    reply = PerceiverReply.model_validate({"intent": "count lines", "asks": asks})
    assert reply.asks is None


def test_relative_and_wildcard_paths_are_not_named_files():
    question = Question(answer="effect", paths=["rel/x", "/a/*.log", "/srv/ok", 3])
    assert question.paths == ["/srv/ok"]


def test_hostile_text_is_read_without_error():
    question = read_question("how many " * 50_000 + "\x00" + "/" * 5000)
    assert question.answer == "count"
    assert len(question.subject) <= 300


@pytest.mark.parametrize(
    ("matching", "count_of", "kept"),
    [
        ("data.txt", "lines", ""),  # a count of every line has no word to look for
        ("data.txt", "matches", ""),  # the file counted is not a pattern
        ("timeout", "matches", "timeout"),
        ("refused", "matches", ""),  # not in the request: R1 made it up
    ],
)
def test_only_a_word_the_request_states_for_matching_lines_is_kept(
    matching, count_of, kept
):
    request = "How many lines of /srv/data.txt say timeout?"
    asks = Question(answer="count", count_of=count_of, matching=matching)
    assert question_for(asks, request).matching == kept


def test_an_effect_the_words_do_not_ask_for_names_no_path_to_demand():
    asks = Question(answer="effect", effect="write", paths=["/srv/a.log"])
    assert question_for(asks, "How many lines does /srv/a.log have?").paths == []
    wanted = question_for(asks, "Write the line count of x to /srv/a.log")
    assert wanted.paths == ["/srv/a.log"]


def test_the_words_win_where_they_plainly_state_another_kind():
    asks = Question(answer="path", paths=["'/etc/compose/stack.yml'"])
    kept = question_for(asks, "List the services defined in /etc/compose/stack.yml.")
    assert kept.answer == "names"
    assert asks.paths == ["/etc/compose/stack.yml"]


def test_what_a_count_leaves_out_is_r1s_when_the_request_holds_it():
    request = "How many stations does /srv/st.tsv list, ignoring the header line?"
    assert read_question(request).excluding == "the header line"
    assert question_for(Question(answer="count"), request).excluding == (
        "the header line"
    )
    asks = Question(answer="count", excluding="header")
    assert question_for(asks, request).excluding == "header"
    # An exclusion the request does not state is R1's invention: dropped.
    plain = "How many lines does /srv/st.tsv have?"
    assert question_for(asks, plain).excluding == ""
    assert read_question("Is /srv/st.tsv empty, excluding comments?").excluding == ""


def test_what_a_count_counts_is_the_words_where_they_plainly_ask_how_many():
    # A real R1 called the accounts of a passwd file "files", and code then
    # took a count of files holding "bash" as the answer.
    request = "How many accounts in /d/passwd use /bin/bash as their login shell?"
    asks = Question(answer="count", count_of="files")
    assert question_for(asks, request).count_of == ""
    files = "How many Python files are there under /srv/p?"
    assert question_for(Question(answer="count"), files).count_of == "files"
    # Plain lines in the words leave R1's narrower count of lines standing.
    errors = Question(answer="count", count_of="matches", matching="ERROR")
    request = "How many ERROR lines are in /srv/app.log?"
    assert question_for(errors, request).count_of == "matches"
    # Words that ask no plain "how many" leave R1's reading as it is.
    asks = Question(answer="count", count_of="distinct")
    assert (
        question_for(asks, "Combien d'adresses IP différentes ?").count_of == "distinct"
    )


def test_a_request_that_needs_a_change_is_refused_when_every_call_only_read():
    # A project's task: R1 called it free text, or gave no Question at all.
    for asks in (Question(answer="text", subject="the --json flag"), None):
        needed = change_asked(asks)
        assert (needed.answer, needed.effect) == ("effect", "change")
        read = ToolCall("shell", {"command": "grep -c '' greet.py"})
        assert "only read" in unmade_effect(needed, [read])
        edit = ToolCall("apply_edit", {"path": "greet.py", "old": "a", "new": "b"})
        assert unmade_effect(needed, [read, edit]) == ""
    # R1's own effect stands, with the paths it names.
    written = Question(answer="effect", effect="write", paths=["/srv/out.txt"])
    assert change_asked(written) == written
    again = question_for(change_asked(None), "Add a --json flag to greet.py")
    assert (again.answer, again.effect) == ("effect", "change")
