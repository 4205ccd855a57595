"""Done by verification only: a milestone is done when its commands pass at the
commit, and the files they test are outside the Implementor's write set."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from roles.projects import StepRefused, new_project, step
from roles.projects.contracts import ImplementationResult, Milestone, Scope
from roles.projects.events import Cancel, ScopeReply, VerifyReply
from roles.projects.routing import prestep_verdict, regression_verdict
from roles.projects.verification import (
    CommandResult,
    file_words,
    protected_files,
    refusal,
    regressions,
    ungrounded,
)
from roles.tools import Toolbox, ToolboxConfig, ToolError
from tests.unit.projects_script import (
    CHECK,
    TWO,
    accepted,
    assess,
    kinds,
    one_task,
    plan,
    scoped,
    verified,
)

TRACKED = ["src/notes.py", "tests/check.sh", "tests/data/a.txt", "README.md"]


def test_the_files_a_command_names_are_protected_once_committed():
    assert protected_files(["sh tests/check.sh"], [], TRACKED) == ["tests/check.sh"]
    assert protected_files(["./tests/check.sh --fast"], [], TRACKED) == [
        "tests/check.sh"
    ]
    # A directory protects every file below it; pytest's file::test names its file.
    assert protected_files(["python -m pytest tests"], [], TRACKED) == [
        "tests/check.sh",
        "tests/data/a.txt",
    ]
    assert protected_files(["pytest tests/check.sh::test_a"], [], TRACKED) == [
        "tests/check.sh"
    ]
    # A test not committed yet is the task's to write; "." names no test.
    assert protected_files(["sh tests/new.sh", "ls ."], [], TRACKED) == []


def test_declared_protected_paths_hold_their_files():
    assert protected_files(["make check"], ["tests"], TRACKED) == [
        "tests/check.sh",
        "tests/data/a.txt",
    ]
    assert protected_files([], ["README.md"], TRACKED) == ["README.md"]


def test_a_milestone_is_done_only_when_every_command_passed():
    ok = CommandResult(command="sh a.sh", exit_code=0, output="ok")
    failed = CommandResult(command="sh b.sh", exit_code=1, output="1 test failed")
    assert refusal(1, ["sh a.sh"], [ok], "abc") == ""
    reason = refusal(2, ["sh a.sh", "sh b.sh"], [ok, failed], "0123456789abcdef")
    assert reason == (
        "verification failed at commit 0123456789ab: `sh b.sh` exited 1: 1 test failed"
    )
    unrun = CommandResult(command="sh a.sh", output="not run: the sandbox is off")
    assert "`sh a.sh` did not run: not run: the sandbox is off" in refusal(
        1, ["sh a.sh"], [unrun]
    )
    assert "did not run `sh b.sh`" in refusal(1, ["sh a.sh", "sh b.sh"], [ok])


def test_a_milestone_without_a_command_is_never_done():
    assert refusal(3, [], []).startswith(
        "milestone 3 has no verification command, so it cannot be accepted as done"
    )


@pytest.mark.parametrize(
    ("verify", "protected", "message"),
    [
        (["  "], [], "must not be empty"),
        (["x" * 301], [], "at most 300 characters, not 301"),
        (["sh a.sh\nrm -rf ."], [], "one line"),
        (["a", "b", "c", "d", "e", "f"], [], "at most 5 items"),
        ([7], [], "valid string"),
        ([], ["/etc/passwd"], "inside the repository"),
        ([], ["../up"], "inside the repository"),
        ([], ["."], "must name files"),
    ],
)
def test_a_bad_config_is_refused_naming_what_is_wrong(verify, protected, message):
    with pytest.raises(ValidationError, match=message):
        new_project("Add notes", verify, protected)
    with pytest.raises(ValidationError, match=message):
        Milestone(description="Notes", verify=verify, protected=protected)


def test_a_scope_with_a_bad_command_changes_nothing():
    state, _ = new_project("Add notes")
    with pytest.raises(ValidationError, match="must not be empty"):
        Scope(remit="Notes", milestones=[{"description": "Notes", "verify": [""]}])
    assert state.phase == "scope" and state.milestones == []


def test_a_milestone_complete_runs_the_commands_before_moving_on():
    state, _ = scoped()
    state, _ = one_task(state)
    state, _ = plan(state, "milestone_done")
    state, actions = assess(state, "milestone_complete")
    assert kinds(actions) == ["verify_milestone"]
    assert actions[0].commands == [CHECK] and state.phase == "verify"
    assert state.milestone_index == 0


def test_a_failing_command_refuses_the_done_and_tells_the_task_planner():
    state, _ = scoped(TWO[:1])
    state, _ = one_task(state)
    state, _ = plan(state, "milestone_done")
    state, actions = accepted(state, exit_code=1)
    assert kinds(actions) == ["record_verification", "ask_task_planner"]
    record = actions[0]
    assert not record.passed and record.commit == "c0ffee"
    assert (
        record.reason == f"verification failed at commit c0ffee: `{CHECK}` exited 1: ok"
    )
    assert state.phase == "plan" and state.milestone_index == 0
    assert actions[1].view.correction_hint.startswith("Not done: verification failed")


def test_the_last_milestone_s_failing_command_keeps_the_project_from_completing():
    state, _ = scoped(TWO[:1])
    state, _ = one_task(state)
    for _ in range(3):
        state, _ = plan(state, "milestone_done")
        state, actions = accepted(state, exit_code=1)
    # Three refused claims: the ScopeAgent, never "complete".
    assert kinds(actions) == [
        "record_verification",
        "record_escalation",
        "ask_scope_agent",
    ]
    assert "verification failed" in actions[2].divergence_analysis
    assert state.phase == "scope"


def test_a_milestone_without_commands_goes_to_the_assessor_and_is_refused():
    state, _ = scoped(TWO[:1], verify=())
    state, _ = one_task(state)
    state, actions = plan(state, "milestone_done")
    assert "has no verification command" in actions[0].view.context
    state, actions = assess(state, "milestone_complete")
    assert kinds(actions) == ["record_verification", "ask_task_planner"]
    assert not actions[0].passed and "no verification command" in actions[0].reason
    assert state.phase == "plan" and state.claims == 1


def test_a_periodic_review_saying_complete_is_verified_too():
    state, _ = scoped()
    for number in range(5):
        state, actions = one_task(state, f"task {number}")
    assert actions[-1].view.trigger == "periodic"
    state, actions = assess(state, "milestone_complete")
    assert kinds(actions) == ["verify_milestone"]
    state, actions = verified(state, exit_code=0)
    assert kinds(actions) == ["record_verification", "ask_task_planner"]
    assert actions[0].passed and state.milestone_index == 1


def test_the_project_s_own_commands_come_before_each_milestone_s():
    state, _ = new_project("Add notes", ["sh tests/all.sh"], ["tests"])
    scope = Scope(remit="Notes", milestones=[{"description": "Notes", "verify": "x"}])
    state, _ = step(state, ScopeReply(request_id=state.awaiting, scope=scope))
    assert state.commands() == ["sh tests/all.sh", "x"]
    assert state.protected_paths() == ["tests"]


def test_a_verification_reply_after_a_cancel_changes_nothing():
    state, _ = scoped()
    state, _ = one_task(state)
    state, _ = plan(state, "milestone_done")
    state, _ = assess(state, "milestone_complete")
    asked = state
    state, actions = step(state, Cancel())
    assert state.phase == "cancelled" and kinds(actions) == ["finish_project"]
    late = VerifyReply(request_id=asked.awaiting, commit="c0ffee", results=[])
    with pytest.raises(StepRefused, match="the project is cancelled"):
        step(state, late)


def test_qa_refuses_work_that_changed_a_protected_file(tmp_path):
    (tmp_path / "notes.py").write_text("x = 1\n")
    result = ImplementationResult(files=["notes.py"], result_summary="done")
    assert prestep_verdict(tmp_path, result) is None
    verdict = prestep_verdict(tmp_path, result, protected=["tests/check.sh"])
    assert not verdict.passed
    assert "tests/check.sh: a verification file of the milestone" in verdict.feedback


def test_the_executor_may_not_write_a_protected_file(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "check.sh").write_text("exit 1\n")
    config = ToolboxConfig(protected_paths=[tmp_path / "tests" / "check.sh"])
    toolbox = Toolbox(tmp_path, config, approve=lambda ask: True)
    for name, args in [
        ("write_file", {"path": "tests/check.sh", "content": "exit 0\n"}),
        ("apply_edit", {"path": "tests/check.sh", "old": "exit 1", "new": "exit 0"}),
        ("write_file", {"path": str(tmp_path / "tests/check.sh"), "content": "x"}),
    ]:
        with pytest.raises(ToolError, match="tests/check.sh is protected"):
            toolbox.call(name, args)
    assert (tmp_path / "tests" / "check.sh").read_text() == "exit 1\n"
    toolbox.call("write_file", {"path": "notes.py", "content": "x = 1\n"})
    assert (tmp_path / "notes.py").exists()


def test_the_planner_and_the_assessor_see_every_command_the_done_needs():
    state, _ = new_project("Add notes", ["sh tests/all.sh"])
    scope = Scope(remit="Notes", milestones=[{"description": "Notes", "verify": "x"}])
    state, actions = step(state, ScopeReply(request_id=state.awaiting, scope=scope))
    assert actions[0].view.milestone.verify == ["sh tests/all.sh", "x"]
    assert state.milestone.verify == ["x"]
    state, actions = plan(state, "milestone_done")
    assert actions[0].view.milestone.verify == ["sh tests/all.sh", "x"]


def test_only_a_command_that_passed_before_and_fails_on_the_work_is_broken():
    def ran(command, code, output=""):
        return CommandResult(command=command, exit_code=code, output=output)

    before = [ran("make check", 0), ran("sh old.sh", 1), ran("sh gone.sh", 0)]
    after = [
        ran("make check", 2, "SyntaxError: unterminated string literal"),
        ran("sh old.sh", 1),  # failed before the task too: not its doing
        CommandResult(command="sh gone.sh", output="not run: no sandbox"),
        ran("sh new.sh", 1),  # not run before: nothing to compare
    ]
    broken = regressions(before, after, "a" * 40)
    assert broken == [
        "`make check` passed at the last commit aaaaaaaaaaaa and fails with this "
        "task's changes (exit 2): SyntaxError: unterminated string literal"
    ]
    verdict = regression_verdict(broken)
    assert not verdict.passed and verdict.issues == broken
    assert verdict.feedback.startswith("Verification broken by this task: `make")
    assert regressions(before, [ran("make check", 0)]) == []
    assert regression_verdict([]) is None


def test_a_word_is_a_file_s_path_only_when_written_as_one():
    assert file_words("python3 -m unittest -q") == []
    assert file_words("make check") == []
    assert file_words("python -m pytest tests/test_x.py::test_a -q") == [
        "tests/test_x.py"
    ]
    assert file_words("node ./bin/run.js --fast") == ["bin/run.js"]
    assert file_words("python3 greet.py --json Ann") == ["greet.py"]
    assert file_words('python -c "import greet; greet.main(1.5)"') == []
    present = {"greet.py", "bin", "bin/run.js"}
    asked = "Write tests/check.sh and make it pass"
    assert ungrounded(["greet.py", "tests/check.sh", "tests/x.sh"], present, asked) == [
        "tests/x.sh"
    ]
