"""R4b's code paths: the fan-in gate, the offline verdict and the abandon rule."""

from __future__ import annotations

import pytest

from roles.claims.evidence import format_evidence
from roles.claims.stated_values import ANSWERED, VALUE_ANSWERED, asked_key
from roles.contracts import DispatchManifest, GapPoint, SubTaskOutcome, TaskSpec
from roles.llm.offline import OfflineModel
from roles.llm.offline_roles import NO_ALTERNATIVE
from roles.meta_validator import evaluate


def outcome(subtask_id, intent, status="matched", output=None, reason=None, calls=()):
    return SubTaskOutcome(
        subtask_id=subtask_id,
        parent_task_id="offline_task",
        intent=intent,
        status=status,
        output=output,
        failure_reason=reason,
        tool_calls=list(calls),
    )


def manifest(ids_=("a", "b"), reason=""):
    return DispatchManifest(
        task_id="offline_task", subtask_ids=list(ids_), reason=reason
    )


def test_offline_meta_validator_accepts_and_joins_outputs():
    outcomes = [outcome("a", "echo a", output="a"), outcome("b", "echo b", output="b")]
    result = evaluate(
        manifest(), outcomes, model=OfflineModel(), elapsed_ms=12, replans_so_far=0
    )
    assert type(result.message).__name__ == "OutcomeSummary"
    assert result.message.merged_output == "a\nb"
    assert result.message.elapsed_ms == 12
    assert result.usage is None


def test_failed_outcome_is_a_replan_with_reasons_and_correction_count():
    failed = outcome("b", "false", status="failed", reason="exit status 1")
    failed.gap_trajectory = [GapPoint(attempt=1), GapPoint(attempt=2)]
    outcomes = [outcome("a", "true"), failed]
    result = evaluate(
        manifest(), outcomes, model=OfflineModel(), elapsed_ms=5, replans_so_far=0
    )
    request = result.message
    assert type(request).__name__ == "ReplanRequest"
    assert request.gap_summary == "exit status 1"
    assert request.failed_subtasks == ["b"]
    assert request.correction_count == 2
    assert request.recommendation == "replan"
    assert [o.subtask_id for o in request.outcomes] == ["a", "b"]


def test_third_replan_request_recommends_abandon():
    outcomes = [outcome("a", "false", status="failed")]
    second = evaluate(
        manifest(["a"]), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=1
    )
    third = evaluate(
        manifest(["a"]), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=2
    )
    assert second.message.recommendation == "replan"
    assert third.message.recommendation == "abandon"
    assert third.message.gap_summary == "a"


def _denied_round(request, command):
    spec = TaskSpec(task_id="offline_task", intent=request, raw_input=request)
    denial = format_evidence(
        "shell",
        {"command": command},
        "[LAW1] rm deletes files permanently — denied by the operator; nothing ran",
    )
    failed = outcome("a", request, status="failed", reason="Law 1: [LAW1] rm …")
    failed.tool_calls = [denial]
    plan = DispatchManifest(task_id="offline_task", subtask_ids=["a"], task_spec=spec)
    return evaluate(
        plan, [failed], model=OfflineModel(), elapsed_ms=1, replans_so_far=0
    )


def test_a_denial_of_the_requests_own_effect_ends_the_run_at_once():
    # Another spelling of the same deletion would only ask the operator again.
    result = _denied_round("Delete /srv/keep/notes.log", "unlink /srv/keep/notes.log")
    assert result.message.recommendation == "abandon"
    assert result.message.gap_summary.startswith("[LAW1] rm deletes files")
    # A denied call on something the request does not ask to change leaves
    # other ways to try.
    other = _denied_round("How many lines has /srv/keep/notes.log?", "rm /tmp/x")
    assert other.message.recommendation == "replan"


def test_empty_manifest_is_an_abandon_with_its_reason():
    result = evaluate(
        manifest([], reason="the offline model cannot find an alternative: x"),
        [],
        model=OfflineModel(),
        elapsed_ms=0,
        replans_so_far=0,
    )
    assert result.message.recommendation == "abandon"
    assert result.message.gap_summary.startswith(NO_ALTERNATIVE)


def test_negative_elapsed_time_is_a_clear_error():
    with pytest.raises(ValueError, match="elapsed_ms"):
        evaluate(manifest(), [], model=OfflineModel(), elapsed_ms=-1, replans_so_far=0)


def asked(question: str) -> DispatchManifest:
    spec = TaskSpec(task_id="offline_task", intent="answer", raw_input=question)
    return DispatchManifest(task_id="offline_task", subtask_ids=["a"], task_spec=spec)


TOTAL = "What is the total of the amount column in /srv/payments.csv?"
PRICE = (
    "Get the price list from http://127.0.0.1:9/exports/prices.csv (mirrored under "
    "/srv/mirror) and tell me the highest price in it."
)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (TOTAL, "The 'amount' column is the third column."),
        (TOTAL, {"matches": True, "content": "The file was read successfully."}),
        (TOTAL, None),
        (PRICE, "The highest price in the file is: [the highest price value]"),
    ],
)
def test_a_question_for_a_number_that_no_output_answers_is_replanned(question, said):
    outcomes = [outcome("a", "sum the amounts", output=said)]
    result = evaluate(
        asked(question), outcomes, model=OfflineModel(), elapsed_ms=0, replans_so_far=0
    )
    request = result.message
    assert type(request).__name__ == "ReplanRequest"
    [verdict] = request.task_criteria_verdicts
    assert verdict.criterion == ANSWERED and verdict.verdict == "fail"
    assert "no subtask's output states a number" in request.gap_summary


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (PRICE, "The highest price is 188.28."),
        ("Tell me the weekday of 2025-01-01.", "Wednesday"),
        (TOTAL, "The total is 13467."),
        ("How many entries have the level ERROR?", "21"),
        ("Write a script that prints the total of a.csv", "wrote total.py"),
        ("Print the weekday of 2025-01-01", "Wednesday"),
    ],
)
def test_an_answer_with_a_number_or_a_request_for_no_number_is_not_held(question, said):
    wrote = format_evidence("write_file", {"path": "total.py", "content": "x"}, "ok")
    result = evaluate(
        asked(question),
        [outcome("a", "do it", output=said, calls=[wrote])],
        model=OfflineModel(),
        elapsed_ms=0,
        replans_so_far=0,
    )
    assert type(result.message).__name__ == "OutcomeSummary"


def test_a_name_asked_for_with_which_is_one_a_tool_showed():
    # "Which …" asks for a thing named: the name must be one a tool printed.
    question = "Which is the largest file in /srv/logs? Tell me its name."
    listed = shell("ls -S /srv/logs | head -1", "[exit code 0]\nbig.log")
    shown = outcome("a", "do it", output="big.log")
    for calls, accepted in (([listed], True), ([], False)):
        result = evaluate(
            asked(question),
            [shown.model_copy(update={"tool_calls": calls})],
            model=OfflineModel(),
            elapsed_ms=0,
            replans_so_far=0,
        )
        assert (type(result.message).__name__ == "OutcomeSummary") is accepted


KEY = "What is max_connections in /srv/db/config.yaml?"


def shell(command: str, output: str) -> str:
    return format_evidence("shell", {"command": command}, output)


def told(question, said, calls):
    done = outcome("a", "read the setting", output=said)
    done.tool_calls = calls
    return evaluate(
        asked(question), [done], model=OfflineModel(), elapsed_ms=0, replans_so_far=0
    ).message


@pytest.mark.parametrize(
    ("said", "calls", "missing"),
    [
        # renamed-file, retry: find printed nothing, ".*" matched the claim.
        (
            "The config file was found.",
            [shell("find /srv/db -name 'config.yaml'", "[exit code 0]\n")],
            "no tool output shows max_connections",
        ),
        (
            "max_connections is 100",
            [shell("cat /srv/db/config.yml", "[exit code 0]\nmax_connections: 140\n")],
            "a tool output shows max_connections with 140",
        ),
        (
            "max_connections is 1",
            [shell("grep -c max_connections /srv/db/config.yml", "[exit code 0]\n1\n")],
            "no tool output shows max_connections",
        ),
        (
            "max_connections is 140",
            [shell("grep max_connections /srv/db/config.yaml", "[exit code 2]\n140")],
            "no tool output shows max_connections",
        ),
    ],
)
def test_a_question_for_a_keys_value_not_stated_as_shown_is_replanned(
    said, calls, missing
):
    request = told(KEY, said, calls)
    assert type(request).__name__ == "ReplanRequest"
    [verdict] = request.task_criteria_verdicts
    assert verdict.criterion == VALUE_ANSWERED and verdict.verdict == "fail"
    assert missing in request.gap_summary


@pytest.mark.parametrize(
    ("question", "said", "calls"),
    [
        (
            KEY,
            "max_connections is 140",
            [
                shell(
                    "cat /srv/db/config.yml",
                    "[exit code 0]\nport: 5432\nmax_connections: 140\n",
                )
            ],
        ),
        (
            "What's the value of `db.port` in /srv/app.json?",
            "5432",
            [
                format_evidence(
                    "read_file", {"path": "/srv/app.json"}, '{"db.port": 5432}'
                )
            ],
        ),
        (
            KEY,
            "It is 140.",
            [
                shell(
                    "awk -F': ' '/max_connections/ {print $2}' /srv/db/config.yml",
                    "[exit code 0]\n140\n",
                )
            ],
        ),
        # Not a key written as code: the rule does not apply.
        ("What is the capital of France?", "Paris", []),
    ],
)
def test_a_keys_value_stated_as_a_tool_showed_it_is_accepted(question, said, calls):
    assert type(told(question, said, calls)).__name__ == "OutcomeSummary"


def test_the_asked_key_is_a_word_written_as_code():
    assert asked_key(KEY) == "max_connections"
    assert asked_key("what is the `timeout` setting in app.ini?") == "timeout"
    assert asked_key("What is the total of the amount column in a.csv?") == ""
    assert asked_key("What is the capital of France?") == ""
