"""A script the subtask is asked to run has run only when a command ran it."""

import pytest

from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import invented_facts
from roles.claims.script_runs import unrun_script
from roles.contracts import ExecutionResult, SubTask

DIR = "/var/tmp/tasks/write-script"
# The intent and the one call of a real run that a small validator accepted as
# "The script was then run".
INTENT = (
    f"Step 1: Create the Python script `hello.py` in the directory `{DIR}`. "
    "Step 2: Run the Python script `hello.py`."
)
ECHOED = format_evidence(
    "shell",
    {"command": f"echo 'hello from artoo' > {DIR}/hello.py"},
    "[exit code 0]\n",
)


def shell(command: str, output: str = "[exit code 0]\nhello from artoo") -> str:
    return format_evidence("shell", {"command": command}, output)


def test_a_script_written_and_never_run_is_not_done():
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent=INTENT)
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="The Python script `hello.py` was created and the script ran.",
        tool_calls=[ECHOED],
    )
    said = invented_facts(subtask, result)
    assert "asks to run hello.py, but no command ran it after its last write" in said


@pytest.mark.parametrize(
    "command",
    [
        f"python3 {DIR}/hello.py",
        "python hello.py",
        f"cd {DIR} && python3 -u hello.py",
        f"timeout 10 python3 '{DIR}/hello.py'",
        "chmod +x hello.py && ./hello.py",
        f"{DIR}/hello.py",
    ],
)
def test_a_command_that_runs_the_script_after_its_write_counts(command):
    assert unrun_script(INTENT, [ECHOED, shell(command)]) == ""


@pytest.mark.parametrize(
    "command",
    [
        f"cat {DIR}/hello.py",
        f"echo 'print(1)' >> {DIR}/hello.py",
        "python3 myhello.py",
        "ls -l hello.py",
    ],
)
def test_a_command_that_only_names_the_script_does_not_run_it(command):
    assert "no command ran it" in unrun_script(INTENT, [ECHOED, shell(command)])


def test_a_run_before_the_last_write_ran_an_older_file():
    rewritten = format_evidence(
        "write_file",
        {"path": f"{DIR}/hello.py", "content": "print('hello from artoo')"},
        "wrote 26 bytes",
    )
    calls = [ECHOED, shell("python3 hello.py", "[exit code 1]\nSyntaxError"), rewritten]
    assert "after its last write" in unrun_script(INTENT, calls)
    assert unrun_script(INTENT, [*calls, shell("python3 hello.py")]) == ""


@pytest.mark.parametrize(
    "intent",
    [
        "Create hello.py that prints 'hello from artoo'.",
        "How many lines does scripts/run.sh have?",
        "Run the test suite and report how many tests failed.",
    ],
)
def test_no_script_to_run_asks_for_no_run(intent):
    assert unrun_script(intent, [ECHOED]) == ""


def test_every_script_named_must_run():
    intent = "Run build.sh, then run check.py."
    calls = [shell("sh build.sh", "[exit code 0]\nbuilt")]
    assert "asks to run check.py, but no command ran it;" in unrun_script(intent, calls)
    calls.append(shell("python3 check.py", "[exit code 0]\nok"))
    assert unrun_script(intent, calls) == ""


def test_only_the_scripts_of_a_sentence_that_says_run_must_run():
    intent = "Step 1: Read utils.py. Step 2: Run main.py; report what it prints."
    calls = [shell("python3 main.py", "[exit code 0]\nok")]
    assert unrun_script(intent, calls) == ""
    assert "asks to run main.py" in unrun_script(intent, [])


def test_a_run_of_the_script_that_printed_the_asked_words_shows_it_done(tmp_path):
    # A real round: the 1.5B validator quoted the claim "The Python script
    # 'hello.py' was created and ran successfully"; the run is the evidence.
    from roles.claims.script_runs import script_shown

    script = tmp_path / "hello.py"
    script.write_text("print('hello from artoo')\n")
    request = f"Create {script} that prints 'hello from artoo', then run it."
    intent = "Step 1: Create the Python script 'hello.py'. Step 2: Run 'hello.py'."
    ran = shell(f"python3 {script}")

    assert script_shown(intent, request, [ran]) == (
        f"`python3 {script}` ran {script} after its last write, exited 0 and "
        "printed 'hello from artoo'"
    )
    write = format_evidence(
        "write_file", {"path": str(script), "content": "x"}, "wrote 1 bytes"
    )
    for calls, why in [
        ([ran, write], "ran before its last write"),
        ([shell(f"sh {script}")], "a .py run by sh"),
        ([shell(f"python3 {script}", "[exit code 1]\nhello from artoo")], "failed"),
        ([shell(f"python3 {script}", "[exit code 0]\nhello")], "other words"),
        ([shell("python3 hello.py")], "not the asked path"),
    ]:
        assert script_shown(intent, request, calls) == "", why
    assert script_shown("Step 1: Create 'hello.py'.", request, [ran]) == ""
    assert script_shown(intent, f"Create {script}, then run it.", [ran]) == ""
    script.unlink()
    assert script_shown(intent, request, [ran]) == ""


def test_a_script_subtask_is_matched_on_its_run_without_asking_the_model(tmp_path):
    from roles.agent_validator import validate

    script = tmp_path / "hello.py"
    script.write_text("print('hello from artoo')\n")
    validation = validate(
        SubTask(subtask_id="s1", parent_task_id="t1", intent=INTENT),
        ExecutionResult(
            subtask_id="s1",
            status="completed",
            output="The Python script 'hello.py' was created and ran successfully.",
            tool_calls=[shell(f"python3 {script}")],
        ),
        model=object(),  # any call to it would fail the attempt
        attempt=1,
        trajectory=[],
        workspace=tmp_path,
        request=f"Create {script} that prints 'hello from artoo', then run it.",
    )
    assert validation.verdict == "matched"
    assert validation.verdicts[0].evidence.startswith(f"`python3 {script}` ran")


def test_a_script_changed_by_an_edit_after_its_run_has_not_run_since():
    intent = "Step 1: Create hello.py. Step 2: Run the Python script `hello.py`."
    made = format_evidence(
        "create_file", {"path": "hello.py", "content": "print(1)"}, "wrote 8 bytes"
    )
    ran = format_evidence("shell", {"command": "python3 hello.py"}, "[exit code 0]\n1")
    edit = format_evidence(
        "apply_edit", {"path": "hello.py", "old": "1", "new": "2"}, "replaced 1"
    )
    assert "no command ran it after its last write" in unrun_script(
        intent, [made, ran, edit]
    )
    assert unrun_script(intent, [made, edit, ran]) == ""
