"""Reply shapes a 1.5B model really writes are read for what they unambiguously mean.

Each test is one shape (reference/local-model.md, and a real R2 run with
Qwen2.5-Coder-1.5B-Instruct); the last ones are shapes that stay refused.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from roles.contracts import Criterion, describe_check, normalise_criterion
from roles.llm.jsonparse import parse_as
from roles.llm.schemas import keep_criteria
from roles.meta_validator import CriterionResult, MetaReply
from roles.perceiver import PerceiverReply
from roles.planning.replies import NextMovesReply, PlanReply


def plan_with_criteria(criteria):
    return PlanReply.model_validate(
        {"subtasks": [{"intent": "count files", "success_criteria": criteria}]}
    )


# R2's criteria: a check where a criterion belongs, or beside no text.


def test_bare_check_object_as_a_criterion_states_what_the_check_asserts():
    reply = PlanReply.model_validate(
        {
            "task_criteria": [{"type": "output_matches", "pattern": r"^\d+$"}],
            "subtasks": [{"intent": "count the Python files"}],
        }
    )

    assert reply.task_criteria == [
        Criterion(
            criterion=r"output matches /^\d+$/",
            check={"type": "output_matches", "pattern": r"^\d+$"},
        )
    ]
    assert reply.notes == []


@pytest.mark.parametrize(
    ("check", "text"),
    [
        ({"type": "exit_code", "value": 0}, "exit code is 0"),
        ({"type": "output_contains", "value": "ok"}, 'output contains "ok"'),
        ({"type": "output_matches", "pattern": "hel+o"}, "output matches /hel+o/"),
        ({"type": "file_exists", "path": "out/r.md"}, "file out/r.md exists"),
        (
            {"type": "json_field", "path": "a.b", "value": 3},
            "output field a.b equals 3",
        ),
        ({"type": "json_field", "path": "a.b"}, "output has the field a.b"),
    ],
)
def test_each_check_type_states_its_own_criterion_text(check, text):
    assert describe_check(check) == text
    assert normalise_criterion(check) == Criterion(criterion=text, check=check)


def test_criterion_without_its_text_takes_the_text_its_check_states():
    reply = plan_with_criteria(
        [{"mode": "verifiable", "check": {"type": "file_exists", "path": "a.txt"}}]
    )

    assert reply.subtasks[0].success_criteria == [
        Criterion(
            criterion="file a.txt exists",
            check={"type": "file_exists", "path": "a.txt"},
        )
    ]


def test_criterion_with_neither_text_nor_check_is_dropped_with_a_note():
    reply = plan_with_criteria(["output is one integer", {"mode": "plausible"}])

    assert reply.subtasks[0].success_criteria == ["output is one integer"]
    assert reply.notes == [
        'subtask 1: dropped a criterion stating nothing: {"mode": "plausible"}'
    ]


def test_bare_check_without_its_parameter_states_nothing_and_is_dropped():
    reply = PlanReply.model_validate(
        {"task_criteria": [{"type": "output_matches"}], "subtasks": ["count files"]}
    )

    assert reply.task_criteria == []
    assert reply.notes == [
        'task_criteria: dropped a criterion stating nothing: {"type": "output_matches"}'
    ]


def test_unknown_check_beside_a_text_is_dropped_and_the_text_kept():
    reply = plan_with_criteria(
        [{"criterion": "the file has 3 lines", "check": {"type": "line_count"}}]
    )

    assert reply.subtasks[0].success_criteria == [
        Criterion(criterion="the file has 3 lines")
    ]
    assert reply.notes == [
        "subtask 1: dropped the unknown check "
        '{"type": "line_count"} of \'the file has 3 lines\''
    ]


def test_check_keys_written_beside_the_text_become_its_check():
    criterion = normalise_criterion(
        {"criterion": "the count is printed", "type": "output_matches", "pattern": "1"}
    )

    assert criterion == Criterion(
        criterion="the count is printed",
        check={"type": "output_matches", "pattern": "1"},
    )


def test_mode_in_capitals_is_read_in_lower_case():
    assert normalise_criterion({"criterion": "x", "mode": " Plausible"}).mode == (
        "plausible"
    )


# Text fields given objects, lists, numbers or null.


def test_context_given_as_an_object_is_its_compact_json_text():
    reply = PlanReply.model_validate(
        {"subtasks": [{"intent": "read it", "context": {"path": "a.txt", "lines": 3}}]}
    )

    assert reply.subtasks[0].context == '{"path":"a.txt","lines":3}'


def test_text_given_as_a_list_is_its_compact_json_text():
    reply = PlanReply.model_validate(
        {"subtasks": [{"intent": "go", "context": ["use glob", "then wc -l"]}]}
    )

    assert reply.subtasks[0].context == '["use glob","then wc -l"]'


def test_text_given_as_a_list_of_one_string_is_that_string():
    reply = PerceiverReply.model_validate({"intent": ["List the Python files"]})

    assert reply.intent == "List the Python files"


def test_text_given_as_a_number_is_its_json_text():
    reply = PerceiverReply.model_validate({"task_id": 42, "intent": "x"})

    assert reply.task_id == "42"


def test_null_in_a_field_with_a_default_gives_the_default():
    reply = PlanReply.model_validate(
        {
            "task_criteria": None,
            "subtasks": [{"intent": "x", "context": None, "success_criteria": None}],
        }
    )

    assert reply.task_criteria == []
    assert reply.subtasks[0].context == ""
    assert reply.subtasks[0].success_criteria == []
    meta = MetaReply.model_validate({"verdict": "replan", "summary": None})
    assert meta.summary == ""


def test_constraint_values_given_as_objects_are_their_json_text():
    reply = PerceiverReply.model_validate(
        {"intent": "x", "constraints": {"scope": ["src", "tests"], "deadline": None}}
    )

    assert reply.constraints.scope == '["src","tests"]'
    assert reply.constraints.deadline is None


@pytest.mark.parametrize("empty", [None, "", []])
def test_empty_constraints_mean_no_constraints(empty):
    reply = PerceiverReply.model_validate({"intent": "x", "constraints": empty})

    assert reply.constraints.scope is None and reply.constraints.deadline is None


# Lists given one value.


def test_success_criteria_given_as_one_string_is_a_list_of_one():
    reply = plan_with_criteria("output is one integer")

    assert reply.subtasks[0].success_criteria == ["output is one integer"]


def test_task_criteria_given_as_one_object_is_a_list_of_one():
    reply = PlanReply.model_validate(
        {"task_criteria": {"criterion": "one number"}, "subtasks": ["count"]}
    )

    assert reply.task_criteria == [Criterion(criterion="one number")]


def test_subtasks_given_as_one_object_is_a_list_of_one():
    reply = PlanReply.model_validate({"subtasks": {"intent": "count the files"}})

    assert [s.intent for s in reply.subtasks] == ["count the files"]


def test_subtask_written_as_a_string_is_its_intent():
    reply = PlanReply.model_validate({"subtasks": ["list files", "count them"]})

    assert [s.intent for s in reply.subtasks] == ["list files", "count them"]
    assert [s.success_criteria for s in reply.subtasks] == [[], []]


def test_criteria_results_given_as_one_object_is_a_list_of_one():
    reply = MetaReply.model_validate(
        {"verdict": "accept", "criteria_results": {"criterion": "c", "met": True}}
    )

    assert [r.criterion for r in reply.criteria_results] == ["c"]


# Booleans and numbers written as strings.


def test_sequence_written_as_a_string_is_a_number():
    reply = PlanReply.model_validate({"subtasks": [{"intent": "x", "sequence": "2"}]})

    assert reply.subtasks[0].sequence == 2


def test_needs_clarification_written_as_a_string_is_a_boolean():
    reply = PerceiverReply.model_validate(
        {"needs_clarification": "true", "question": "Which folder?"}
    )

    assert reply.needs_clarification is True


@pytest.mark.parametrize(("met", "passed"), [("true", True), ("no", False), (1, True)])
def test_met_written_as_a_string_or_number_is_a_boolean(met, passed):
    assert CriterionResult.model_validate({"met": met}).passed is passed


def test_verdict_in_capitals_is_read_in_lower_case():
    assert CriterionResult.model_validate({"verdict": " PASS"}).passed is True


@pytest.mark.parametrize("answer", [{"met": "partially"}, {"verdict": "mostly"}])
def test_an_answer_that_is_not_yes_or_no_is_no_judgement_and_never_passes(answer):
    result = CriterionResult.model_validate(answer)

    assert result.met is None and result.verdict is None
    assert result.passed is False


# The reply around the JSON.


def test_fenced_plan_with_prose_around_it_is_read():
    text = (
        "Here is the plan:\n```json\n"
        '{"task_criteria": [{"type": "output_matches", "pattern": "\\\\d+"}], '
        '"subtasks": [{"intent": "count", "success_criteria": "exit 0", '
        '"context": {"dir": "."}, "sequence": "1"}]}\n```\nLet me know!'
    )

    reply = parse_as(text, PlanReply)

    assert reply.task_criteria[0].criterion == r"output matches /\d+/"
    assert reply.subtasks[0].success_criteria == ["exit 0"]
    assert reply.subtasks[0].context == '{"dir":"."}'
    assert reply.subtasks[0].sequence == 1


def test_unfenced_reply_with_prose_around_it_is_read():
    text = 'Sure! {"verdict": "Accept", "summary": "done"} Hope that helps.'

    assert parse_as(text, MetaReply).verdict == "accept"


# Well-formed replies are untouched; ambiguous shapes stay refused.


def test_well_formed_plan_reads_exactly_as_written():
    payload = {
        "task_criteria": ["the answer is one integer"],
        "subtasks": [
            {
                "intent": "count",
                "success_criteria": [
                    "output is one integer",
                    {
                        "criterion": "exit 0",
                        "mode": "verifiable",
                        "check": {"type": "exit_code", "value": 0},
                    },
                ],
                "context": "use glob",
                "sequence": 1,
            }
        ],
    }

    reply = PlanReply.model_validate(payload)

    assert reply.model_dump(mode="json") == payload
    assert reply.notes == []


def test_notes_cannot_be_written_by_the_model():
    reply = PlanReply.model_validate({"subtasks": ["x"], "notes": ["all good"]})

    assert reply.notes == []


def test_constraints_given_as_a_bare_string_are_refused():
    with pytest.raises(ValidationError, match="constraints"):
        PerceiverReply.model_validate({"intent": "x", "constraints": "only src"})


def test_empty_list_where_an_intent_belongs_is_no_intent():
    with pytest.raises(ValidationError, match="intent"):
        PlanReply.model_validate({"subtasks": [{"intent": []}]})


def test_unknown_mode_is_refused_rather_than_guessed():
    with pytest.raises(ValidationError, match="mode"):
        plan_with_criteria([{"criterion": "x", "mode": "automatic"}])


def test_one_next_move_is_still_too_few():
    with pytest.raises(ValidationError, match="next_moves"):
        NextMovesReply.model_validate({"next_moves": "try again"})


def test_a_subtask_that_lost_the_users_path_gets_the_request_in_its_context():
    from roles.contracts import SubTask
    from roles.planning.shape import lead_with_request

    request = "How many lines does /var/tmp/t/data.txt have?"
    lost = SubTask(subtask_id="a", parent_task_id="t", intent="count the lines")
    other = SubTask(subtask_id="b", parent_task_id="t", intent="count the words")
    [alone] = lead_with_request([lost], request)
    assert alone.intent == request
    assert alone.context == "Planned steps: count the lines"
    led = lead_with_request([lost, other], request)
    assert [s.context for s in led] == [f"The user's request: {request}"] * 2
    assert lead_with_request(led, request) == led


@pytest.mark.parametrize(
    ("text", "check"),
    [
        (
            "output_contains 'hello from artoo'",
            {"type": "output_contains", "value": "hello from artoo"},
        ),
        (
            "output_matches, 'port=\\d+'",
            {"type": "output_matches", "pattern": "port=\\d+"},
        ),
        (
            "file_exists(out/report.md)",
            {"type": "file_exists", "path": "out/report.md"},
        ),
        ("exit_code 0", {"type": "exit_code", "value": 0}),
    ],
)
def test_a_check_written_as_text_becomes_that_check(text, check):
    [kept], notes = keep_criteria([text], "subtask 1")
    assert kept["check"] == check and notes == []
    assert Criterion.model_validate(kept).check == check


@pytest.mark.parametrize(
    "text",
    [
        "exit_code: zero",
        "output_contains",
        "output_contains: 137 lines",
        "the output names a file",
    ],
)
def test_text_that_is_not_one_check_stays_a_plain_criterion(text):
    assert keep_criteria([text], "subtask 1") == ([text], [])


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (
            {"type": "output_matches", "value": "lines"},
            {"type": "output_matches", "pattern": "lines"},
        ),
        (
            {"type": "output_contains", "pattern": "ok"},
            {"type": "output_contains", "value": "ok"},
        ),
        # Both given: each keeps its own, and the check's own one is used.
        (
            {"type": "output_matches", "pattern": "regex", "value": ".*"},
            {"type": "output_matches", "pattern": "regex", "value": ".*"},
        ),
    ],
)
def test_a_text_check_given_the_other_text_checks_parameter_reads_it_as_its_own(
    written, read
):
    # A real R2 reply: {"type": "output_matches", "value": "lines"} failed the
    # right count of 58 as "missing parameter 'pattern'", and GGS blocked wc.
    beside = normalise_criterion({"criterion": "output_matches", "check": written})
    bare = plan_with_criteria([written]).subtasks[0].success_criteria[0]
    assert beside.check == read and bare.check == read
    assert bare.criterion == describe_check(read)
