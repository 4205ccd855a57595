"""The project agents' prompts: each within its budget, the system prompt whole."""

from roles.budget import estimate_tokens
from roles.projects import token_budgets
from roles.projects.contracts import DoneEntry, ImplementationResult, Milestone
from roles.projects.events import AskQA, AskScopeAgent, AskTaskPlanner, DispatchTask
from roles.projects.prompts import (
    PLANNER_SYSTEM,
    SCOPE_SYSTEM,
    planner_messages,
    qa_messages,
    scope_messages,
    task_input,
)
from roles.projects.window import Window, planner_view


def test_a_huge_repository_listing_is_cut_to_the_scope_agents_budget():
    ask = AskScopeAgent(request_id="r1", user_request="Add a --json flag")
    files = "\n".join(f"src/module_{n}.py" for n in range(20_000))
    budget = token_budgets()["scope_agent"]
    messages = scope_messages(ask, files, budget)
    assert estimate_tokens(messages) <= budget
    assert messages[0]["content"] == SCOPE_SYSTEM
    assert "Add a --json flag" in messages[1]["content"]
    assert "src/module_0.py" in messages[1]["content"]


def test_the_planner_sees_its_window_feedback_and_hint_within_a_small_budget():
    done = [
        DoneEntry(task_id=f"t{n}", description=f"task {n}", result_summary="x" * 300)
        for n in range(7)
    ]
    view = planner_view(
        Window(done=done, carry_forward=["Colony UI"]),
        Milestone(description="User can create colonies", areas=["models"]),
        qa_feedback="name field missing",
        correction_hint="Stay on the console",
        attempt=2,
    )
    budgets = token_budgets(context_tokens=4096)
    messages = planner_messages(
        AskTaskPlanner(request_id="r2", view=view),
        "a.py\n" * 5000,
        budgets["task_planner"],
    )
    text = messages[1]["content"]
    assert estimate_tokens(messages) <= budgets["task_planner"]
    assert messages[0]["content"] == PLANNER_SYSTEM
    for needle in ("User can create colonies", "Areas of work: models", "Colony UI"):
        assert needle in text
    assert "Attempt 2. The last attempt's work was discarded" in text
    assert "QA said: name field missing" in text and "Stay on the console" in text


def test_qa_gets_the_plan_the_summary_and_the_files():
    result = ImplementationResult(files=["a.py"], result_summary="wrote a.py")
    ask = AskQA(request_id="r3", task_id="t1", implementation_plan="PRP", result=result)
    text = qa_messages(ask, [("a.py", "print(1)")], 10_000)[1]["content"]
    assert "## TASK PLAN\nPRP" in text and "### a.py\nprint(1)" in text


def test_a_tasks_run_input_is_its_description_and_plan():
    dispatch = DispatchTask(
        request_id="t1-a1",
        task_id="t1",
        attempt=1,
        description="Colony model",
        implementation_plan="Create colony.py with a Colony class",
    )
    text = task_input(dispatch)
    assert text.startswith("Colony model") and "Create colony.py" in text
    assert "with the file tools (read_file_lines, apply_edit, create_file)" in text
