"""The real-model report sets the one-account sequence against the per-task accounts."""

from __future__ import annotations

from tests.model.report import (
    ONE_ACCOUNT,
    PROJECTS,
    Row,
    one_account_changes,
    table,
)


def run(task: str, suite: str, solved: bool, run_id: str) -> Row:
    return Row(task, "answer", suite, run_id=run_id, solved=solved)


def test_a_task_solved_alone_and_not_under_one_account_is_a_regression():
    rows = [
        run("count-lines", "tuning", True, "r-own"),
        run("count-lines", ONE_ACCOUNT, False, "r-one"),
    ]

    assert one_account_changes(rows) == [
        "- compared: 1 tasks; solved 1 under their own accounts, 0 under one account",
        "- one-account regressions: count-lines (own account r-own, one account r-one)",
        "- one-account gains: none",
    ]


def test_a_task_solved_only_under_one_account_is_a_gain():
    rows = [
        run("csv-sum", "tuning", False, "r-own"),
        run("csv-sum", ONE_ACCOUNT, True, "r-one"),
    ]

    changes = one_account_changes(rows)

    assert changes[1] == "- one-account regressions: none"
    assert changes[2] == (
        "- one-account gains: csv-sum (own account r-own, one account r-one)"
    )


def test_tasks_with_the_same_outcome_in_both_are_named_in_neither_line():
    rows = [
        run("count-lines", "tuning", True, "a1"),
        run("csv-sum", "tuning", False, "a2"),
        run("largest-log", "tuning", True, "a3"),
        run("count-lines", ONE_ACCOUNT, True, "b1"),
        run("csv-sum", ONE_ACCOUNT, False, "b2"),
        run("largest-log", ONE_ACCOUNT, False, "b3"),
    ]

    changes = one_account_changes(rows)

    assert changes[0].startswith("- compared: 3 tasks; solved 2 ")
    assert changes[1] == (
        "- one-account regressions: largest-log (own account a3, one account b3)"
    )
    assert changes[2] == "- one-account gains: none"


def test_tasks_run_under_only_one_kind_of_account_are_not_compared():
    rows = [
        run("project-json-flag", "tuning", True, "p1"),
        run("count-lines", ONE_ACCOUNT, True, "b1"),
        run("count-lines", "practice", False, "c1"),
    ]

    assert one_account_changes(rows) == []


def test_a_run_that_never_started_shows_a_dash_for_its_id():
    rows = [
        run("count-lines", "tuning", True, "r-own"),
        run("count-lines", ONE_ACCOUNT, False, ""),
    ]

    assert "(own account r-own, one account -)" in one_account_changes(rows)[1]


def test_the_table_prints_the_comparison_after_every_suite_table():
    rows = [
        run("count-lines", "tuning", True, "r-own"),
        run("count-lines", "practice", True, "r-practice"),
        run("count-lines", ONE_ACCOUNT, False, "r-one"),
    ]

    text = table(rows, "session")

    assert text.index("## one-account tasks") < text.index(
        "## one-account against per-task accounts"
    )
    assert text.rstrip().endswith("- one-account gains: none")
    assert "one-account regressions: count-lines (own account r-own" in text


def test_the_table_has_no_comparison_without_the_one_account_suite():
    rows = [run("count-lines", "tuning", True, "r-own")]

    assert "one-account" not in table(rows, "session")


def project(task: str, status: str, false_done: bool = False) -> Row:
    return Row(
        task,
        "project",
        PROJECTS,
        run_id=f"project {task}-id",
        solved=status == "complete" and not false_done,
        false_accept=false_done,
        directive=status,
        rounds=3,
        escalations=1,
        tokens=1000,
        wall_s=120.0,
        note="verifier's note",
    )


def test_projects_print_their_own_table_with_a_false_done_marked(tmp_path):
    from bench.modelfloor import solved_tasks

    rows = [
        run("count-lines", "tuning", True, "r-own"),
        project("project-median", "complete"),
        project("project-cart-bug", "failed"),
        project("project-json-flag", "complete", false_done=True),
    ]

    text = table(rows, "session")

    projects = text[text.index("## projects") :]
    assert "| task | kind | solved | false done | finished | tasks run |" in projects
    assert (
        "| project-cart-bug | project | no | no | no (failed) | 3 | 1 | 1000 | 120 "
        "| project project-cart-bug-id |"
    ) in projects
    assert "| project-json-flag | project | no | **YES** | yes |" in projects
    assert "- finished: 2/3; solved (verifier satisfied): 1/3" in projects
    assert "- false dones: 1" in projects
    assert "- task runs: 9; escalations: 3" in projects
    # bench/modelfloor.py reads the solved rows of every table by its headers.
    results = tmp_path / "model-results.md"
    results.write_text(text)
    assert [t.task for t in solved_tasks(results)] == ["count-lines", "project-median"]
