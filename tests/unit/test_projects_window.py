"""The sliding window: done list roll-up, carry-forward, what the planner sees."""

from roles.budget import CHARS_PER_TOKEN
from roles.projects.config import DEFAULT_CONFIG, ProjectConfig
from roles.projects.contracts import DoneEntry, Milestone
from roles.projects.window import (
    RollUp,
    Window,
    add_done,
    assessor_view,
    clear_carry_forward,
    planner_view,
    roll_up,
    with_carry_forward,
)

MILESTONE = Milestone(description="User can create colonies", areas=["data models"])


def entry(n: int, description: str = "", summary: str = "done") -> DoneEntry:
    return DoneEntry(
        task_id=f"t{n}", description=description or f"task {n}", result_summary=summary
    )


def filled(count: int, config=DEFAULT_CONFIG) -> Window:
    window = Window()
    for n in range(1, count + 1):
        window = add_done(window, entry(n), config)
    return window


def test_the_done_list_keeps_seven_entries_in_full():
    window = filled(7)
    assert [e.task_id for e in window.done] == [f"t{n}" for n in range(1, 8)]
    assert window.rollup.count == 0 and window.rollup.text() == ""


def test_the_eighth_entry_rolls_the_oldest_into_the_summary():
    window = filled(8)
    assert [e.task_id for e in window.done] == [f"t{n}" for n in range(2, 9)]
    assert window.rollup.text() == "Earlier, 1 task done: t1 task 1."


def test_the_summary_lists_rolled_tasks_oldest_first():
    window = filled(10)
    assert (
        window.rollup.text()
        == "Earlier, 3 tasks done: t1 task 1; t2 task 2; t3 task 3."
    )
    assert len(window.done) == 7


def test_the_summary_stays_within_its_budget_and_still_counts_every_task():
    long = "implement the colony resource ledger with persistence " * 3
    window = Window()
    for n in range(1, 61):
        window = add_done(window, entry(n, long), DEFAULT_CONFIG)
    text = window.rollup.text()
    assert len(text) <= DEFAULT_CONFIG.rollup_chars
    assert text.startswith("Earlier, 53 tasks done (")
    assert "t53 implement" in text and "t1 implement" not in text


def test_the_roll_up_is_deterministic():
    assert filled(30).rollup == filled(30).rollup


def test_a_tiny_budget_cuts_even_the_one_clause_left():
    config = ProjectConfig(rollup_chars=40)
    rollup = roll_up(RollUp(), entry(1, "a rather long task description here"), config)
    assert len(rollup.text()) <= 40 and rollup.count == 1


def test_carry_forward_is_rough_capped_and_clearable():
    window = with_carry_forward(Window(), ["x" * 300, "b", "c", "d", "e", "f"])
    assert len(window.carry_forward) == 5 and len(window.carry_forward[0]) <= 100
    assert clear_carry_forward(window).carry_forward == []
    assert window.carry_forward[1] == "b"


def test_the_planner_sees_milestone_window_feedback_and_hint_only():
    window = with_carry_forward(filled(9), ["Colony properties"])
    view = planner_view(
        window, MILESTONE, qa_feedback="tests fail", correction_hint="UI", attempt=2
    )
    assert view.milestone == MILESTONE
    assert view.done_summary.startswith("Earlier, 2 tasks done")
    assert [e.task_id for e in view.done][0] == "t3"
    assert view.carry_forward == ["Colony properties"]
    assert (view.qa_feedback, view.correction_hint, view.attempt) == (
        "tests fail",
        "UI",
        2,
    )


def test_a_full_planner_view_fits_the_task_planners_budget():
    long = "x" * 1000
    window = Window()
    for n in range(1, 40):
        window = add_done(window, entry(n, long, long), DEFAULT_CONFIG)
    window = with_carry_forward(window, [long] * 9)
    view = planner_view(window, MILESTONE, qa_feedback="", correction_hint="")
    tokens = len(view.model_dump_json()) / CHARS_PER_TOKEN
    assert tokens < DEFAULT_CONFIG.task_planner_tokens / 4


def test_the_assessor_sees_remit_milestone_and_window_with_its_trigger():
    view = assessor_view(filled(3), "remit", MILESTONE, "abort", "no GUI toolkit")
    assert view.trigger == "abort" and view.context == "no GUI toolkit"
    assert [e.task_id for e in view.done] == ["t1", "t2", "t3"]
