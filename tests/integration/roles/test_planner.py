"""R2 against a scripted model over real HTTP: prompts, parsing, the plan validator."""

from __future__ import annotations

import itertools
import json
from datetime import date

import pytest

from roles.contracts import (
    Criterion,
    FinalResult,
    Loss,
    Megram,
    MemoryRecall,
    PlanDirective,
    SubTaskOutcome,
    TaskSpec,
)
from roles.llm.client import client_for
from roles.planner import next_moves, plan
from tests.llm_server import ScriptedLLMServer

TODAY = date(2025, 3, 14)
SPEC = TaskSpec(
    task_id="count_py_files",
    intent="Count the Python files in the project",
    raw_input="how many python files?",
)


@pytest.fixture
def llm_server():
    """Yield a running ScriptedLLMServer, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def r2(llm_server):
    """Yield an R2 client with no retries, so a fault is final at once."""
    env = llm_server.env(ARTOO_LLM_RETRIES="0")
    with client_for("R2", env, run_id="run-1", sleep=lambda _s: None) as client:
        yield client


def ids():
    counter = itertools.count(1)
    return lambda: f"uuid-{next(counter)}"


def plan_reply(subtasks=None, criteria=("the answer is one integer",)):
    if subtasks is None:
        subtasks = [
            {
                "subtask_id": "a1b2c3d4-e5f6-7890-abcd-ef1234567890",
                "parent_task_id": "something_else",
                "intent": "Count *.py files under the project",
                "success_criteria": [
                    "output is one integer",
                    {"criterion": "exit 0", "check": {"type": "exit_code", "value": 0}},
                ],
                "context": "Use glob with pattern **/*.py",
                "sequence": 0,
            },
            {"intent": "Report the count", "success_criteria": ["one number"]},
        ]
    return json.dumps({"task_criteria": list(criteria), "subtasks": subtasks})


def directive(name="change_approach", tools=(), targets=()):
    return PlanDirective(
        task_id="count_py_files",
        loss=Loss(D=1.0, P=0.8, Omega=0.2, L=0.8),
        prev_directive="init",
        directive=name,
        blocked_tools=list(tools),
        blocked_targets=list(targets),
        failed_criterion="output is one integer",
        failure_class="logical",
        budget_pressure=0.2,
        grad_l=0.15,
        rationale="the glob approach returned nothing",
    )


def run_plan(model, **kwargs):
    return plan(SPEC, model=model, today=TODAY, id_factory=ids(), **kwargs)


def prompt(server, index=0):
    return server.requests_for("R2")[index].messages[-1]["content"]


def test_runtime_owns_ids_parents_and_sequences(llm_server, r2):
    llm_server.reply("R2", plan_reply())
    result = run_plan(r2)
    assert result.error == ""
    assert [s.subtask_id for s in result.subtasks] == ["uuid-1", "uuid-2"]
    assert {s.parent_task_id for s in result.subtasks} == {"count_py_files"}
    assert [s.sequence for s in result.subtasks] == [1, 1]
    # A count's form is code's: R2's free-text criteria of it are left out.
    assert result.task_criteria == []
    assert result.subtasks[0].success_criteria[0] == Criterion(
        criterion="exit 0", check={"type": "exit_code", "value": 0}
    )
    assert result.subtasks[0].success_criteria[1].check == {"type": "answer_form"}
    assert result.usage is not None and len(result.usage.calls) == 1


def test_plan_prompt_has_date_spec_tools_and_memory_blocks(llm_server, r2):
    llm_server.reply("R2", plan_reply())
    sop = Megram(
        level="C", space="intent:count_py_files", entity="env:local",
        content="Never count with ls | wc.", f=1.0, sigma=-1.0, k=0.0,
    )  # fmt: skip
    recall = MemoryRecall(
        task_id="count_py_files", space="intent:count_py_files",
        entity="env:local", sops=[sop],
    )  # fmt: skip
    result = run_plan(r2, recall=recall)
    text = prompt(llm_server)
    assert "Today's date: 2025-03-14" in text
    assert '"task_id": "count_py_files"' in text
    assert "MUST NOT (proven constraints" in text
    assert "Never count with ls | wc." in text
    system = llm_server.requests_for("R2")[0].messages[0]["content"]
    assert "shell, glob, read_file, write_file, search, fetch_url" in system
    assert "task_criteria" in system and "output_matches" in system
    assert result.calibration.must_not == ["Never count with ls | wc."]


def test_first_plan_without_memory_says_none(llm_server, r2):
    llm_server.reply("R2", plan_reply())
    run_plan(r2)
    assert "--- MEMORY CONSTRAINTS (code-derived) ---\n(none)" in prompt(llm_server)


def test_replan_prompt_has_directive_semantics_and_outcomes(llm_server, r2):
    llm_server.reply("R2", plan_reply())
    failed = SubTaskOutcome(
        subtask_id="old-1", parent_task_id="count_py_files", intent="Glob *.py",
        status="failed", failure_reason="glob matched nothing",
    )  # fmt: skip
    run_plan(
        r2,
        directive=directive(tools=["glob"], targets=["**/*.py"]),
        previous_outcomes=[failed],
    )
    text = prompt(llm_server)
    assert '"directive": "change_approach"' in text
    assert "break_symmetry: the plan is stuck" in text
    assert "environmental: change the target" in text
    assert "Do not use tool: glob" in text
    assert "Do not use this specific query/command/path again: **/*.py" in text
    assert "[failed] Glob *.py — failure: glob matched nothing" in text
    system = llm_server.requests_for("R2")[0].messages[0]["content"]
    assert "Executors have these tools: shell, read_file," in system


def test_plan_naming_a_blocked_tool_is_regenerated_with_the_reason(llm_server, r2):
    bad = [{"intent": "Use glob to list *.py", "context": "", "sequence": 1}]
    good = [{"intent": "Count files with find", "context": "find . -name '*.py'"}]
    llm_server.reply("R2", plan_reply(bad))
    llm_server.reply("R2", plan_reply(good))
    result = run_plan(r2, directive=directive(tools=["glob"]))
    assert result.error == ""
    # A plan of one subtask runs the request itself, R2's steps beside it.
    assert [s.intent for s in result.subtasks] == [SPEC.raw_input]
    assert result.subtasks[0].context.startswith("Planned steps: Count files with")
    assert [s.subtask_id for s in result.subtasks] == ["uuid-1"]
    retry = prompt(llm_server, 1)
    assert "rejected" in retry and "blocked tool 'glob'" in retry
    assert len(result.usage.calls) == 2


def test_a_replan_drops_a_check_that_a_blocked_missing_path_exists(llm_server, r2):
    guess = "/srv/app/count_py.py"
    exists = {"criterion": "found", "check": {"type": "file_exists", "path": guess}}
    sub = [{"intent": "Count *.py files", "success_criteria": [exists, "a number"]}]
    llm_server.reply("R2", plan_reply(sub))
    result = run_plan(r2, directive=directive(name="change_path", targets=[guess]))
    [form] = result.subtasks[0].success_criteria
    assert form.check == {"type": "answer_form"}
    assert any(f"dropped the check that {guess} exists" in n for n in result.notes)


def test_tool_name_inside_another_word_is_not_a_violation(llm_server, r2):
    sub = [{"intent": "Run the shellcheck linter", "context": "a glob_like name"}]
    llm_server.reply("R2", plan_reply(sub))
    result = run_plan(r2, directive=directive(tools=["shell", "glob"]))
    assert result.error == ""
    assert len(llm_server.requests_for("R2")) == 1


def test_blocked_tool_three_times_runs_with_each_subtask_told_it_is_gone(
    llm_server, r2
):
    bad = [{"intent": "list with glob", "context": ""}, {"intent": "count them"}]
    for _ in range(3):
        llm_server.reply("R2", plan_reply(bad))
    result = run_plan(r2, directive=directive(tools=["glob"]))
    assert result.error == ""
    assert [s.intent for s in result.subtasks] == ["list with glob", "count them"]
    gone = "The tool 'glob' is blocked (it failed in an earlier round)"
    assert result.subtasks[0].context.startswith(gone)
    assert "blocked" not in result.subtasks[1].context
    assert any("the plan runs without it" in n for n in result.notes)
    assert len(llm_server.requests_for("R2")) == 3


def test_empty_plan_is_regenerated_once_then_an_error(llm_server, r2):
    llm_server.reply("R2", plan_reply([]))
    llm_server.reply("R2", plan_reply([]))
    result = run_plan(r2)
    assert result.subtasks == []
    assert "no subtasks" in result.error
    assert "rejected: the plan had no subtasks" in prompt(llm_server, 1)
    assert len(llm_server.requests_for("R2")) == 2


def test_empty_plan_then_a_good_one_is_accepted(llm_server, r2):
    llm_server.reply("R2", plan_reply([]))
    llm_server.reply("R2", plan_reply())
    result = run_plan(r2)
    assert len(result.subtasks) == 2


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"task_criteria": [], "subtasks": [{"intent": "ls"}]}\n```',
        "[]",
        '<think>maybe two</think>{"subtasks": [{"intent": "ls", "sequence": -3}]}',
    ],
    ids=["fenced", "empty bare array", "think block"],
)
def test_every_reply_form_parses(llm_server, r2, content):
    llm_server.reply("R2", content)
    llm_server.reply("R2", '{"subtasks": [{"intent": "ls"}]}')
    result = run_plan(r2)
    assert [s.intent for s in result.subtasks] == [SPEC.raw_input]
    assert result.subtasks[0].context == "Planned steps: ls"
    assert result.subtasks[0].sequence == 1


def test_lone_subtask_object_gets_a_repair_request(llm_server, r2):
    llm_server.reply("R2", 'Here is the plan:\n[{"intent": "ls"}, {"intent": "pwd"}]')
    llm_server.reply("R2", '{"subtasks": [{"intent": "ls"}, {"intent": "pwd"}]}')
    result = run_plan(r2)
    assert [s.intent for s in result.subtasks] == ["ls", "pwd"]
    assert "subtasks" in prompt(llm_server, 1)


def test_unusable_reply_is_a_plan_error_not_an_exception(llm_server, r2):
    llm_server.reply("R2", "no plan today")
    llm_server.reply("R2", '{"subtasks": [{"context": "no intent"}]}')
    result = run_plan(r2)
    assert result.subtasks == []
    assert result.error.startswith("R2 planning failed")
    assert len(result.usage.calls) == 2


def test_model_error_is_a_plan_error(llm_server, r2):
    llm_server.fault("R2", status=500)
    result = run_plan(r2)
    assert result.error.startswith("R2 planning failed")
    assert result.calibration is not None


def final():
    return FinalResult(
        task_id="count_py_files",
        summary="abandoned: budget exhausted",
        loss=Loss(D=1.0, P=0.5, Omega=0.9, L=1.0),
        prev_directive="refine",
        directive="abandon",
    )


OUTCOMES = [
    SubTaskOutcome(
        subtask_id="s1", parent_task_id="count_py_files", intent="find files",
        status="matched", output="42 files",
    ),
    SubTaskOutcome(
        subtask_id="s2", parent_task_id="count_py_files", intent="count lines",
        status="failed", failure_reason="permission denied on /root",
    ),
]  # fmt: skip


def test_next_moves_come_from_the_model(llm_server, r2):
    llm_server.reply(
        "R2",
        json.dumps(
            {
                "accomplished": "Found 42 files.",
                "next_moves": ["Grant read access to /root", "Skip /root", "Ask", "x"],
            }
        ),
    )
    moves, usage = next_moves(SPEC, final(), OUTCOMES, model=r2)
    assert moves.accomplished == "Found 42 files."
    assert moves.next_moves == ["Grant read access to /root", "Skip /root", "Ask"]
    assert usage is not None
    text = prompt(llm_server)
    assert "permission denied on /root" in text and "budget exhausted" in text


def test_next_moves_fall_back_to_the_template_on_model_error(llm_server, r2):
    llm_server.fault("R2", status=500)
    moves, usage = next_moves(SPEC, final(), OUTCOMES, model=r2)
    assert usage is None
    assert moves.next_moves[0].startswith("Run 'count lines' yourself")
    assert 2 <= len(moves.next_moves) <= 3
    assert "find files → 42 files" in moves.accomplished


CHAIN = [
    {
        "intent": "Read the sales.csv file",
        "success_criteria": [{"type": "output_contains", "value": "read successfully"}],
        "context": "The file is /srv/sales.csv",
        "sequence": 1,
    },
    {
        "intent": "Write the sum to total.txt",
        "success_criteria": [{"type": "file_exists", "path": "total.txt"}],
        "context": "The file is /srv/sales.csv",
        "sequence": 2,
    },
    {
        "intent": "Report the total.",
        "success_criteria": [{"type": "output_matches", "pattern": "^\\d+$"}],
        "sequence": 3,
    },
]


def test_join_runs_a_chain_as_one_subtask_judged_on_what_lasts(llm_server):
    llm_server.reply("R2", plan_reply(CHAIN))
    env = llm_server.env(ARTOO_LLM_RETRIES="0", ARTOO_PLAN_CHAINS="join")
    with client_for("R2", env, run_id="run-1", sleep=lambda _s: None) as client:
        result = run_plan(client)
    assert result.error == ""
    [joined] = result.subtasks
    assert joined.intent == SPEC.raw_input
    assert joined.context.startswith(
        "Planned steps: Step 1: Read the sales.csv file. Step 2: Write the sum "
        "to total.txt. Step 3: Report the total."
    )
    assert (joined.sequence, joined.subtask_id) == (1, "uuid-1")
    assert joined.context.count("The file is /srv/sales.csv") == 1
    # Under a count asked for, the form is code's: the plan's checks are not.
    checks = [c.check["type"] for c in joined.success_criteria]
    assert checks == ["answer_form"]
    assert any("a chain of 3 subtasks runs as one subtask" in n for n in result.notes)


def test_join_keeps_a_plan_with_parallel_subtasks_and_split_keeps_chains(
    llm_server, r2
):
    parallel = [dict(CHAIN[0]), dict(CHAIN[1], sequence=1), dict(CHAIN[2])]
    llm_server.reply("R2", plan_reply(parallel))
    env = llm_server.env(ARTOO_LLM_RETRIES="0", ARTOO_PLAN_CHAINS="join")
    with client_for("R2", env, run_id="run-1", sleep=lambda _s: None) as client:
        assert len(run_plan(client).subtasks) == 3
    llm_server.reply("R2", plan_reply(CHAIN))
    assert [s.sequence for s in run_plan(r2).subtasks] == [1, 2, 3]
