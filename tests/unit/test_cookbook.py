"""The executor's cookbook, and the nudge a correction takes from it."""

from __future__ import annotations

import subprocess

from roles.agent_validator import validate
from roles.claims.command import parse_command
from roles.claims.command_queries import COUNTS, command_counts
from roles.claims.evidence import format_evidence
from roles.claims.question import Question
from roles.contracts import ExecutionResult, SubTask
from roles.cookbook import COOKBOOK, SHOWN, cookbook_text, lines_for, nudge
from roles.criteria import FORM_CHECK
from roles.executor_prompts import build_messages
from roles.llm.config import LLMSettings
from roles.tools import Toolbox


def test_every_line_is_in_the_executors_prompt_and_names_no_tasks_data():
    text = cookbook_text()
    for kinds, command, label in COOKBOOK:
        assert f"{command}  # {label}" in text and kinds
    for data in ("passwd", "/bin/bash", "access.log", ".jpeg", "sales.csv"):
        assert data not in text


def test_the_prompt_has_the_cookbook_unless_it_is_turned_off(tmp_path):
    sub = SubTask(subtask_id="s", parent_task_id="t", intent="count")
    box = Toolbox(tmp_path)
    on = build_messages(sub, box, None, "", 1, 10)[0]["content"]
    off = build_messages(sub, box, None, "", 1, 10, cookbook=False)[0]["content"]
    assert "Standard commands" in on and "Standard commands" not in off


def test_a_nudge_names_the_failed_step_and_the_lines_for_the_answer_asked():
    call = format_evidence(
        "shell", {"command": "wc -l /d/passwd"}, "[exit code 0]\n31 /d/passwd"
    )
    said = nudge("count", [call])
    assert said.startswith(
        "The step that failed: `wc -l /d/passwd` printed '31 /d/passwd'."
    )
    assert "\n  grep -c 'TEXT' FILE  # lines holding TEXT" in said
    assert "Next, try one of:" in nudge("path", []) and nudge("unknown", [call]) == ""


def test_every_entry_runs_in_bash_as_written():
    # The label is a comment: a model that copies the whole line runs the
    # command, never "lines: wc -l …". Every program it names exists here.
    for _, command, label in COOKBOOK:
        line = f"{command}  # {label}"
        names = {
            program.name
            for pipeline in parse_command(line).pipelines
            for program in pipeline.programs
        }
        for name in names:
            known = subprocess.run(
                ["bash", "-c", f"type -t {name}"], capture_output=True, check=False
            )
            assert known.returncode == 0, (line, name)


def test_an_entry_serves_the_answers_its_output_is():
    # A pipeline that ends in a count answers a count and nothing else; a
    # listing answers no count. Before, "find DIR … | wc -l" was filed under
    # paths, and a question of where a function is defined was nudged to
    # count files.
    for kinds, command, _ in COOKBOOK:
        counted = command_counts(parse_command(command)) in COUNTS
        counting = {kind for kind in kinds if kind.split(":")[0] == "count"}
        assert counted == bool(counting), command
        assert not counted or counting == set(kinds), command


def test_a_question_of_where_is_nudged_to_search_not_to_count():
    said = nudge("path", [])
    assert "grep -rl 'TEXT' DIR" in said and "find DIR -type f -name 'NAME'" in said
    assert "wc -l" not in said


def test_a_nudge_quotes_the_failed_steps_first_and_last_lines():
    # A tool's hint, or the error that ends a traceback, is its last line.
    hint = "src/a.py:4: def f():" + " x" * 200
    output = f"[exit code 1]\nno files matched\nmore\n{hint}\n)\n"
    said = nudge("path", [format_evidence("glob", {"pattern": "f"}, output)])
    assert f"printed 'no files matched … {hint[:SHOWN]}'" in said
    assert "more" not in said and hint[: SHOWN + 1] not in said


def test_a_count_of_files_is_nudged_to_count_files_first():
    listing = format_evidence("shell", {"command": "ls -l /d"}, "[exit code 0]\nx")
    said = nudge("count", [listing], "files")
    assert "find DIR -type f" in said and "wc -l < FILE" not in said
    assert "find DIR" not in nudge("count", [listing], "lines")


def test_a_second_derivation_is_shown_only_other_means():
    # The first counted with find | wc; "by other means" lists no find | wc.
    first = lines_for("count", "files")
    other = lines_for("count", "files", frozenset({"shell:find", "shell:wc"}))
    assert any("find DIR" in line for line in first)
    assert other and not any("find DIR" in line for line in other)


class _Judge:
    """R4a's model as far as a correction goes: settings, never called."""

    def __init__(self, nudges: bool):
        self.settings = LLMSettings(nudges=nudges)

    def complete_json(self, *args, **kwargs):  # pragma: no cover - never called
        raise AssertionError("the form check needs no model")


def test_a_correction_carries_the_nudge_when_the_settings_ask_for_it(tmp_path):
    request = "How many accounts in /d/passwd use /bin/bash?"
    sub = SubTask(
        subtask_id="s", parent_task_id="t", intent=request,
        success_criteria=[{"criterion": "a count", "check": {"type": FORM_CHECK}}],
    )  # fmt: skip
    read = format_evidence(
        "read_file", {"path": "/d/passwd"}, "root:x:0:0::/root:/bin/bash"
    )
    result = ExecutionResult(
        subtask_id="s", status="completed", output="I read it", tool_calls=[read]
    )
    for on in (True, False):
        checked = validate(
            sub, result, model=_Judge(on), attempt=1, trajectory=[],
            workspace=tmp_path, request=request, question=Question(answer="count"),
        )  # fmt: skip
        assert checked.verdict == "retry"
        assert ("Next, try one of:" in checked.correction.what_to_do) is on
