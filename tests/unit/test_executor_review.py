"""R3's second look at a first ``failed`` answer."""

from __future__ import annotations

from roles.contracts import SubTask
from roles.executor_review import review_failed, reviewer
from roles.toolloop import ToolCallRecord

FAILED = '{"status": "failed", "output": "not found"}'
GLOB = ToolCallRecord("glob", {"pattern": "**/x"}, "no match; use grep -rln", True)


def test_a_first_failed_answer_is_sent_back_with_the_last_result():
    message = review_failed(FAILED, (GLOB,), 0)
    assert message is not None
    assert message.startswith("Not yet: you reported failed after 1 tool call,")
    assert "The last tool result (glob):\nno match; use grep -rln\n" in message


def test_a_failed_answer_without_calls_is_sent_back_too():
    message = review_failed(f"```json\n{FAILED}\n```", (), 0)
    assert message is not None
    assert "after 0 tool calls" in message
    assert "The last tool result" not in message


def test_other_answers_a_second_failed_and_a_denial_are_taken():
    assert review_failed('{"status": "completed", "output": 3}', (GLOB,), 0) is None
    assert review_failed("not json at all", (GLOB,), 0) is None
    assert review_failed(FAILED, (GLOB,), 1) is None
    denial = ToolCallRecord(
        "shell", {"command": "rm a"}, "[LAW1] rm deletes — denied by the operator"
    )
    assert review_failed(FAILED, (denial, GLOB), 0) is None


def test_a_long_last_result_is_cut_head_and_tail():
    big = ToolCallRecord("shell", {"command": "cat big"}, "A" * 5000 + "END")
    message = review_failed(FAILED, (big,), 0)
    assert message is not None
    assert len(message) < 1200
    assert "END" in message


SUBTASK = SubTask(subtask_id="s1", parent_task_id="t", intent="Sum the amounts")


def test_an_answer_without_evidence_is_sent_back_with_r4as_reason():
    review = reviewer(SUBTASK, lambda: [])
    message = review('{"status": "completed", "output": "10000"}', (), 0)
    assert message is not None
    assert message.startswith("Not yet: no tool was called.")
    assert review('{"status": "completed", "output": "10000"}', (), 1) is None


def test_an_answer_a_tool_output_shows_is_taken():
    shown = ['shell: {"command": "awk ..."} → [exit code 0]\n44025']
    review = reviewer(SUBTASK, lambda: shown)
    assert review('{"status": "completed", "output": "44025"}', (), 0) is None
    unshown = review('{"status": "completed", "output": "10000"}', (), 0)
    assert unshown is not None
    assert "'10000', which no tool output shows" in unshown
    assert "shell tool" not in unshown


def test_a_number_to_compute_is_sent_to_the_shell_when_the_executor_has_it():
    read = ['read_file: {"path": "sales.csv"} → region,amount\nwest,770']
    review = reviewer(SUBTASK, lambda: read, ["read_file", "shell"])
    message = review('{"status": "completed", "output": "10000"}', (), 0)
    assert message is not None
    assert message.endswith(
        "Use the shell tool for it: read_file only shows the data, it computes nothing."
    )
    without = reviewer(SUBTASK, lambda: read, ["read_file"])
    assert "shell" not in without('{"status": "completed", "output": "10000"}', (), 0)


def test_an_answer_that_repeats_the_message_goes_back_once_more():
    review = reviewer(SUBTASK, lambda: [], tools=("shell", "read_file"))
    first = review('{"status": "completed", "output": "10000"}', (), 0)
    assert first is not None
    parrot = (
        '{"status": "uncertain", "output": "The claimed output states \'10000\', '
        "which no tool output shows; run a command that prints it (wc -l, grep -c, "
        "awk); the executor's claimed output is not evidence.\"}"
    )
    again = review(parrot, (), 1)
    assert again is not None and again.startswith("That repeats the checker's")
    assert review(parrot, (), 2) is None
    assert review('{"status": "completed", "output": "10000"}', (), 1) is None


def test_a_failed_read_of_a_file_that_is_elsewhere_is_told_to_read_it_there(tmp_path):
    import pytest

    from roles.tools import Toolbox, ToolError

    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "settings.ini").write_text("port = 8437\n")
    args = {"path": str(tmp_path / "settings.ini")}
    with pytest.raises(ToolError) as err:
        Toolbox(tmp_path).call("read_file", args)
    missing = ToolCallRecord("read_file", args, f"ERROR: {err.value}", True)
    message = review_failed(FAILED, (missing,), 0)
    assert message.endswith(
        'The file is there: call read_file with {"path": "conf/settings.ini"} now.'
    )
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "settings.ini").write_text("port = 1\n")
    with pytest.raises(ToolError) as err:
        Toolbox(tmp_path).call("read_file", args)
    two = ToolCallRecord("read_file", args, f"ERROR: {err.value}", True)
    assert "The file is there" not in review_failed(FAILED, (two,), 0)


def test_an_answer_not_in_the_form_its_words_ask_for_is_sent_back():
    # A real attempt answered "how many …" with a sentence and no number.
    asked = SubTask(
        subtask_id="s1",
        parent_task_id="t",
        intent="How many entries of /d/cron.log were logged between 10:00 and 10:59?",
    )
    counted = ['shell: {"command": "grep -c 10:00 /d/cron.log"} → [exit code 1]\n0']
    review = reviewer(asked, lambda: counted)
    message = review(
        '{"status": "uncertain", "output": "The count is asked for"}', (), 0
    )
    assert message is not None and "no subtask's output states a number" in message
    right = ['shell: {"command": "grep -c \' 10:\' /d/cron.log"} → [exit code 0]\n12']
    assert (
        reviewer(asked, lambda: right)('{"status": "completed", "output": 12}', (), 0)
        is None
    )
