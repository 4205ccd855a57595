"""A linear chain runs as one subtask; anything else runs as R2 wrote it."""

import posixpath

from roles.contracts import SubTask
from roles.planning.blocked_paths import drop_blocked_paths
from roles.planning.prompts import PLAN_SYSTEM
from roles.planning.shape import (
    PROMPT_EXAMPLES,
    drop_copied_examples,
    is_chain,
    join_chain,
)


def step(intent: str, sequence: int, *criteria) -> SubTask:
    return SubTask(
        subtask_id=f"s{sequence}",
        parent_task_id="t",
        intent=intent,
        success_criteria=list(criteria),
        sequence=sequence,
    )


def test_only_several_subtasks_one_per_sequence_are_a_chain():
    assert not is_chain([step("a", 1)])
    assert not is_chain([step("a", 1), step("b", 1)])
    assert not is_chain([step("a", 1), step("b", 2), step("c", 2)])
    assert is_chain([step("b", 3), step("a", 1)])


def test_a_chain_is_joined_in_sequence_order_with_the_last_steps_criteria():
    exists = {"criterion": "made", "check": {"type": "file_exists", "path": "x"}}
    [joined], note = join_chain(
        [step("run x", 2, "prints hi"), step("write x", 1, exists, "says written")]
    )
    assert joined.intent == "Step 1: write x. Step 2: run x."
    assert [
        c if isinstance(c, str) else c.criterion for c in joined.success_criteria
    ] == [
        "made",
        "prints hi",
    ]
    assert note.startswith("a chain of 2 subtasks")


def test_anything_else_is_returned_as_is_without_a_note():
    plan = [step("a", 1), step("b", 1)]
    assert join_chain(plan) == (plan, "")


def test_every_example_is_one_of_r2s_instructions():
    prompt = " ".join(PLAN_SYSTEM.split())
    for example in PROMPT_EXAMPLES:
        assert example in prompt


def test_a_criterion_copied_from_r2s_examples_is_dropped_with_a_note():
    hello = step("Create hello.py", 1, "output_names_one_weekday, Monday to Sunday")
    hello = hello.model_copy(
        update={"success_criteria": [*hello.success_criteria, "prints hello"]}
    )
    task = ["All subtasks completed successfully.", "the script prints hello"]
    [kept], criteria, notes = drop_copied_examples([hello], task, "make hello.py")
    assert kept.success_criteria == ["prints hello"]
    assert criteria == ["the script prints hello"]
    assert len(notes) == 2 and "copied from R2's examples" in notes[0]


def test_the_first_words_of_an_example_written_as_a_name_are_dropped_too():
    find = step("find_file_by_name", 1, "output_names_one_weekday", "output names")
    [kept], _, notes = drop_copied_examples([find], [], "Which file defines f?")
    assert kept.success_criteria == ["output names"]
    assert len(notes) == 1


def test_an_example_copied_with_a_leading_article_is_dropped_too():
    # A real plan for a flaky script carried this criterion and failed on it.
    run = step("Run flaky.sh", 1, "The output names one weekday, Monday to Sunday.")
    [kept], criteria, notes = drop_copied_examples(
        [run], ["The weekday is found."], "Run flaky.sh until it prints ok"
    )
    assert kept.success_criteria == [] and criteria == []
    assert len(notes) == 2
    [kept], _, notes = drop_copied_examples([run], [], "Which weekday is today?")
    assert kept.success_criteria == run.success_criteria and notes == []


def test_a_check_that_quotes_an_example_is_dropped_unless_the_request_is_about_it():
    # A real replan demanded "Total line count" of a script that prints an order total.
    copied = matches("Total line count: ([0-9]+)")
    own = matches("order total: [0-9]+")
    run = step("Run report.sh", 1, copied, own)
    [kept], _, notes = drop_copied_examples(
        [run], [], "What total does report.sh print?"
    )
    assert kept.success_criteria == run.success_criteria[1:]
    assert len(notes) == 1
    [kept], _, notes = drop_copied_examples(
        [run], [], "How many lines does a.txt have?"
    )
    assert kept.success_criteria == run.success_criteria and notes == []


def test_an_example_stays_when_the_request_is_about_what_it_names():
    day = step("Find the weekday", 1, "output names one weekday, Monday to Sunday")
    [kept], _, notes = drop_copied_examples([day], [], "Which weekday is 2025-01-01?")
    assert kept.success_criteria == day.success_criteria and notes == []


def matches(pattern: str) -> dict:
    return {"criterion": "x", "check": {"type": "output_matches", "pattern": pattern}}


SRC = "/tmp/tasks/find-function/src"
GUESS = f"{SRC}/normalize_sku.py"


def exists(path: str) -> dict:
    return {
        "criterion": "output_matches",
        "check": {"type": "file_exists", "path": path},
    }


def test_a_replan_check_on_a_path_ggs_blocked_as_missing_is_dropped():
    # A real replan checked that the guessed file exist after reading it failed.
    request = f"Which file under {SRC}/ defines the function normalize_sku?"
    listing = {"criterion": "lists", "check": {"type": "output_contains", "value": "a"}}
    [sub], notes = drop_blocked_paths(
        [step("find it", 1, exists(GUESS), listing)], [GUESS], request
    )
    assert [c.criterion for c in sub.success_criteria] == ["lists"]
    assert notes == [
        f"find it: dropped the check that {GUESS} exists: GGS blocked that path "
        "after a call on it failed, and the request does not ask to make it"
    ]
    [sub], _ = drop_blocked_paths(
        [step("find it", 1, exists("src/./normalize_sku.py"))], [GUESS], request
    )
    assert sub.success_criteria == []


def test_a_blocked_path_the_request_names_keeps_its_check():
    # "Create out.txt": the file's existence is the request's own effect.
    out = "/tmp/work/out.txt"
    request = "Write the word hi into /tmp/work/out.txt"
    kept = [step("write it", 1, exists(out))]
    assert drop_blocked_paths(kept, [out], request) == (kept, [])
    other = [step("find it", 1, exists(f"{SRC}/other.py"))]
    assert drop_blocked_paths(other, [GUESS], "which file?") == (other, [])
    assert drop_blocked_paths(other, [], "which file?") == (other, [])


def test_a_blocked_path_the_request_only_reads_from_loses_its_check():
    # Asked for db/config.yaml, the file is db/config.yml: reading failed.
    asked = "/tmp/work/db/config.yaml"
    request = f"What is max_connections in {asked}?"
    [sub], notes = drop_blocked_paths(
        [step("read it", 1, exists(asked))], [asked], request
    )
    assert sub.success_criteria == []
    assert notes[0].endswith("the request does not ask to make it")


def test_a_check_that_the_file_to_delete_exists_is_dropped():
    # A real plan for "delete old.log" checked file_exists on old.log: once the
    # operator approved the rm, that check failed three rounds in a row.
    gone = "/tmp/work/old.log"
    request = f"Delete {gone}"
    reads = {"criterion": "read", "check": {"type": "output_matches", "pattern": ".*"}}
    [sub], notes = drop_blocked_paths(
        [step("delete it", 1, exists(gone), reads)], [], request
    )
    assert [c.criterion for c in sub.success_criteria] == ["read"]
    assert notes == [
        f"delete it: dropped the check that {gone} exists: the request asks to "
        "delete it"
    ]
    kept = [step("read it", 1, exists(gone))]
    assert drop_blocked_paths(kept, [], f"Copy {gone} to /tmp/b.log.") == (kept, [])


def test_a_check_that_a_file_the_request_only_reads_exists_is_dropped():
    # "What is max_connections in db/config.yaml?" when the file is config.yml:
    # a real executor ran "touch db/config.yaml" to meet such a check.
    asked = "/tmp/work/db/config.yaml"
    request = f"What is max_connections in {asked}?"
    value = {"criterion": "value", "check": {"type": "output_matches", "pattern": "x"}}
    for path in (asked, "db/config.yaml", "/tmp/work/db/./config.yaml"):
        [sub], notes = drop_blocked_paths(
            [step("read it", 1, exists(path), value)], [], request
        )
        assert [c.criterion for c in sub.success_criteria] == ["value"]
        assert notes == [
            f"read it: dropped the check that {posixpath.normpath(path)} exists: "
            "the request only reads it, and makes nothing"
        ]
    # A file the plan makes on its way, or one the request makes, keeps its check.
    made = [step("count", 1, exists("/tmp/count.py"))]
    assert drop_blocked_paths(made, [], request) == (made, [])
    out = [step("write", 1, exists("/tmp/work/out.txt"))]
    assert drop_blocked_paths(out, [], "Write hi into /tmp/work/out.txt") == (out, [])


def test_a_blocked_command_blocks_the_paths_it_names():
    # GGS blocked "find …/db/config.yaml -type f": the replan checked the path.
    asked = "/tmp/work/db/config.yaml"
    command = f"find {asked} -type f"
    [sub], notes = drop_blocked_paths(
        [step("find it", 1, exists(asked))], [command], f"Copy {asked} to /tmp/x"
    )
    assert sub.success_criteria
    [sub], notes = drop_blocked_paths(
        [step("find it", 1, exists(asked))], [command], f"Show me {asked} in words"
    )
    assert sub.success_criteria == [] and "GGS blocked that path" in notes[0]
