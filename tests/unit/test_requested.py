"""The paths a request asks to delete, and R4b's refusal while they exist."""

from __future__ import annotations

import pytest

from roles.claims.deletions import paths_to_delete, unmet_deletions
from roles.contracts import DispatchManifest, GapPoint, SubTaskOutcome, TaskSpec
from roles.llm.offline import OfflineModel
from roles.meta_validator import evaluate


@pytest.mark.parametrize(
    ("request_text", "paths"),
    [
        ("Delete /srv/app/old.log", ["/srv/app/old.log"]),
        ("delete /srv/app/old.log.", ["/srv/app/old.log"]),
        ("Please remove the file /tmp/a.txt", ["/tmp/a.txt"]),
        ("remove the files /tmp/a.txt and /tmp/b", ["/tmp/a.txt", "/tmp/b"]),
        ("erase /tmp/a, /tmp/b, and /tmp/c", ["/tmp/a", "/tmp/b", "/tmp/c"]),
        ("rm -rf /tmp/build", ["/tmp/build"]),
        ("Delete '/tmp/with space.txt' now", ["/tmp/with space.txt"]),
        ("Remove the directory /tmp/cache then list /tmp", ["/tmp/cache"]),
        ("Delete /tmp/old.log and create /tmp/new.log", ["/tmp/old.log"]),
    ],
)
def test_the_direct_objects_of_a_deleting_verb_are_the_paths_to_delete(
    request_text, paths
):
    assert paths_to_delete(request_text) == paths


@pytest.mark.parametrize(
    "request_text",
    [
        "Do not delete /etc/hosts",
        "don't remove /tmp/keep.txt, just read it",
        "Delete all .log files in /var/log/app",
        "Remove the line 'x=1' from /tmp/conf.ini",
        "Remove /tmp/conf.ini's comment lines",
        "delete /tmp/*.tmp",
        "I removed /tmp/a yesterday; what is in /tmp?",
        "How many lines does /tmp/data.txt have?",
        "delete old.log",
        "",
    ],
)
def test_a_request_that_deletes_no_named_absolute_path_names_none(request_text):
    assert paths_to_delete(request_text) == []


def test_only_paths_that_still_exist_are_unmet(tmp_path):
    kept, gone = tmp_path / "old.log", tmp_path / "gone.log"
    kept.write_text("stale\n")
    verdicts = unmet_deletions(f"Delete {kept} and {gone}")
    assert [v.criterion for v in verdicts] == [f"{kept} is deleted"]
    assert verdicts[0].verdict == "fail"
    assert verdicts[0].failure_class == "logical"
    assert "still exists" in verdicts[0].evidence


def manifest(raw_input: str) -> DispatchManifest:
    spec = TaskSpec(task_id="delete_file", intent="delete a file", raw_input=raw_input)
    return DispatchManifest(task_id="delete_file", subtask_ids=["a"], task_spec=spec)


def matched(output: str) -> SubTaskOutcome:
    return SubTaskOutcome(
        subtask_id="a",
        parent_task_id="delete_file",
        intent="read_file",
        status="matched",
        output=output,
        gap_trajectory=[GapPoint(attempt=1)],
    )


def test_every_subtask_matching_is_no_accept_while_the_file_to_delete_exists(
    tmp_path,
):
    # Seen from a 1.5B planner: a file_exists check on the file to delete, a
    # subtask that only read it, every subtask matched.
    old = tmp_path / "old.log"
    old.write_text("stale line 1\n")
    result = evaluate(
        manifest(f"Delete {old}"),
        [matched("The file 'old.log' exists and contains 1 line.")],
        model=OfflineModel(),
        elapsed_ms=10,
        replans_so_far=0,
    )
    request = result.message
    assert type(request).__name__ == "ReplanRequest"
    assert f"asks to delete {old}, and it still exists" in request.gap_summary
    assert [v.verdict for v in request.task_criteria_verdicts] == ["fail"]


def test_a_deletion_that_happened_is_accepted(tmp_path):
    old = tmp_path / "old.log"
    result = evaluate(
        manifest(f"Delete {old}"),
        [matched(f"removed {old}")],
        model=OfflineModel(),
        elapsed_ms=10,
        replans_so_far=0,
    )
    assert type(result.message).__name__ == "OutcomeSummary"


def test_a_deleting_subtask_does_not_match_while_the_file_is_there(tmp_path):
    from roles.agent_validator import validate
    from roles.claims.evidence import format_evidence
    from roles.contracts import Criterion, ExecutionResult, SubTask

    old = tmp_path / "old.log"
    old.write_text("stale\n")
    request = f"Delete {old}"
    subtask = SubTask(
        subtask_id="s1",
        parent_task_id="t1",
        intent="Step 1: Read the log file. Step 2: Delete the log file.",
        success_criteria=[
            Criterion(
                criterion="file_exists", check={"type": "file_exists", "path": str(old)}
            )
        ],
    )
    read = format_evidence("read_file", {"path": str(old)}, "stale")
    shown = ExecutionResult(
        subtask_id="s1", status="completed", output="The log exists.", tool_calls=[read]
    )

    def judged(result, intent=subtask.intent):
        sub = subtask.model_copy(update={"intent": intent})
        return validate(
            sub,
            result,
            model=OfflineModel(),
            attempt=1,
            trajectory=[],
            workspace=tmp_path,
            request=request,
        )

    validation = judged(shown)
    assert validation.verdict == "retry"
    assert validation.correction.what_was_wrong.endswith(
        f"failed: the request asks to delete {old}, and it still exists: delete it "
        f"(rm {old}; the operator approves it before it runs)"
    )
    assert judged(shown, intent="Read the log file.").verdict == "matched"
    denial = format_evidence(
        "shell", {"command": f"rm {old}"}, "[LAW1] rm deletes files — denied"
    )
    denied = shown.model_copy(update={"tool_calls": [read, denial]})
    assert all("delete it" not in v.evidence for v in judged(denied).verdicts)
    old.unlink()
    assert all("delete it" not in v.evidence for v in judged(shown).verdicts)


# A model endpoint that is never asked: the deletion is shown by the command.
NEVER_ASKED = object()


def deleting_subtask(intent: str):
    from roles.contracts import SubTask

    return SubTask(subtask_id="s1", parent_task_id="t1", intent=intent)


def test_a_deleting_subtask_matches_on_the_command_that_deleted_the_file(tmp_path):
    from roles.agent_validator import validate
    from roles.claims.evidence import format_evidence
    from roles.contracts import ExecutionResult

    old = tmp_path / "old.log"
    rm = format_evidence("shell", {"command": f"rm {old}"}, "[exit code 0]")
    done = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="The log file has been deleted.",
        tool_calls=[rm],
    )
    intent = "Step 1: Read the log file. Step 2: Delete the log file."
    validation = validate(
        deleting_subtask(intent),
        done,
        model=NEVER_ASKED,
        attempt=1,
        trajectory=[],
        workspace=tmp_path,
        request=f"Delete {old}",
    )
    assert validation.verdict == "matched"
    assert validation.verdicts[0].evidence == (
        f"`rm {old}` exited 0 and {old} no longer exists"
    )


@pytest.mark.parametrize(
    ("intent", "command", "output", "there"),
    [
        ("Delete the log file.", "rm {old}", "[exit code 0]", True),
        ("Delete the log file.", "rm {old}", "[exit code 1]\nrm: busy", False),
        ("Delete the log file.", "cat {old}", "[exit code 0]", False),
        ("Delete the log file.", "rm {other}", "[exit code 0]", False),
        ("Read the log file.", "rm {old}", "[exit code 0]", False),
        ("Delete the log and write a summary.", "rm {old}", "[exit code 0]", False),
    ],
)
def test_no_deletion_is_shown_without_a_deleting_command_and_the_file_gone(
    tmp_path, intent, command, output, there
):
    from roles.claims.deletions import deletions_shown
    from roles.claims.evidence import format_evidence

    old, other = tmp_path / "old.log", tmp_path / "other.log"
    call = format_evidence(
        "shell", {"command": command.format(old=old, other=other)}, output
    )
    request = f"Delete {old}"
    if there:
        old.write_text("stale\n")
    assert deletions_shown(intent, request, [call]) == ""
    assert deletions_shown("Delete it.", "Show the log.", [call]) == ""


def test_a_file_name_or_find_delete_names_the_deleted_path(tmp_path):
    from roles.claims.deletions import deletions_shown
    from roles.claims.evidence import format_evidence

    old = tmp_path / "old.log"
    for command in ("rm -f old.log", f"find {tmp_path} -name old.log -delete"):
        call = format_evidence("shell", {"command": command}, "[exit code 0]")
        shown = deletions_shown("Remove old.log.", f"Delete {old}", [call])
        assert shown == f"`{command}` exited 0 and {old} no longer exists"


@pytest.mark.parametrize(
    ("request_text", "only"),
    [
        ("Delete /srv/app/old.log", True),
        ("Please remove the files /tmp/a.txt and /tmp/b now.", True),
        ("erase /tmp/a, /tmp/b, and /tmp/c", True),
        ("Delete /tmp/a.log.\nRemove /tmp/b.log!", True),
        ("Remove the directory /tmp/cache then list /tmp", False),
        ("Delete /tmp/old.log and create /tmp/new.log", False),
        ("Delete /tmp/a.log. How many lines did it have?", False),
        ("Delete /tmp/a.log and tell me its size", False),
        ("Delete all .log files in /var/log/app", False),
        ("Do not delete /etc/hosts", False),
        ("", False),
    ],
)
def test_a_request_only_deletes_when_each_sentence_is_a_plain_deletion(
    request_text, only
):
    from roles.claims.deletions import only_deletes

    assert only_deletes(request_text) is only


def failed_deleting(*calls: str) -> SubTaskOutcome:
    # Seen from a 1.5B planner: the replan's output check demands the text of
    # the previous round's failure, which the deleting command never prints.
    return SubTaskOutcome(
        subtask_id="a",
        parent_task_id="delete_file",
        intent="Step 1: Read the file. Step 2: Delete the file.",
        status="failed",
        output="The file was deleted successfully.",
        failure_reason="no match for /Permission denied/ in the output",
        gap_trajectory=[GapPoint(attempt=1)],
        tool_calls=list(calls),
    )


def test_a_plain_deletion_that_a_command_of_the_round_did_is_accepted(tmp_path):
    from roles.claims.evidence import format_evidence

    old = tmp_path / "old.log"
    rm = format_evidence("shell", {"command": f"rm -f {old}"}, "[exit code 0]")
    cat = format_evidence("shell", {"command": f"cat {old}"}, "[exit code 0]\nx")

    def judged(request_text, *calls):
        return evaluate(
            manifest(request_text),
            [failed_deleting(*calls)],
            model=OfflineModel(),
            elapsed_ms=10,
            replans_so_far=0,
        ).message

    accepted = judged(f"Delete {old}", cat, rm)
    assert type(accepted).__name__ == "OutcomeSummary"
    assert accepted.summary == (
        f"Deleted as asked: `rm -f {old}` exited 0 and {old} no longer exists."
    )
    assert type(judged(f"Delete {old}", cat)).__name__ == "ReplanRequest"
    mixed = f"Delete {old} and tell me how many lines it had"
    assert type(judged(mixed, cat, rm)).__name__ == "ReplanRequest"
    old.write_text("still here\n")
    assert type(judged(f"Delete {old}", cat, rm)).__name__ == "ReplanRequest"


def test_a_deletion_done_in_an_earlier_attempt_of_the_round_is_accepted(tmp_path):
    # Seen with a 1.5B executor: rm ran on approval in attempt 1, attempt 2 ran
    # only ls; the outcome's own calls are the last attempt's.
    from roles.claims.evidence import format_evidence

    old = tmp_path / "old.log"
    rm = format_evidence("shell", {"command": f"rm {old}"}, "[exit code 0]")
    ls = format_evidence("shell", {"command": f"ls {tmp_path}"}, "[exit code 0]")
    outcome = failed_deleting(ls).model_copy(update={"earlier_calls": [rm]})

    accepted = evaluate(
        manifest(f"Delete {old}"),
        [outcome],
        model=OfflineModel(),
        elapsed_ms=10,
        replans_so_far=0,
    ).message

    assert type(accepted).__name__ == "OutcomeSummary"
    assert accepted.summary == (
        f"Deleted as asked: `rm {old}` exited 0 and {old} no longer exists."
    )


def test_parallel_deleting_subtasks_are_each_judged_on_their_own_path(tmp_path):
    # Two subtasks delete one file each; the other's may still wait on the
    # operator. A subtask that names none of the request's paths answers for all.
    from roles.claims.deletions import deletions_shown, subtask_deletions
    from roles.claims.evidence import format_evidence

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    second.write_text("waits on its approval\n")
    request_text = f"Delete {first} and {second}"
    rm = format_evidence("shell", {"command": f"rm {first}"}, "[exit code 0]")

    assert subtask_deletions(f"rm {first}", request_text) == []
    assert deletions_shown(f"rm {first}", request_text, [rm]) == (
        f"`rm {first}` exited 0 and {first} no longer exists"
    )
    assert [v.criterion for v in subtask_deletions("rm b.txt", request_text)] == [
        f"{second} is deleted"
    ]
    assert [
        v.criterion for v in subtask_deletions("Delete the files", request_text)
    ] == [f"{second} is deleted"]
    assert deletions_shown("Delete the files", request_text, [rm]) == ""
