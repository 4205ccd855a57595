"""Memory read back on a real LevelDB: operator rules, failed targets, related tasks."""

from datetime import UTC, datetime, timedelta

import pytest

from memory import MegramStore
from memory.intents import words_of
from roles.contracts import Megram
from roles.ggs.megrams import make_megram

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
ENTITY = "env:local"


@pytest.fixture
def store(tmp_path):
    with MegramStore(tmp_path / "memory.leveldb") as s:
        yield s


def failure(tool, target, state, content="count lines: cloc: not found", at=T0):
    return make_megram(f"tool:{tool}", f"target:{target}", content, state, now=at)


def experience(space, content="Succeeded. Tools: glob:**/*.py", state="accept"):
    return make_megram(space, ENTITY, content, state, now=T0)


# -- what an operator remembered ------------------------------------------------


def test_global_rules_and_timeless_entries_are_recalled_newest_first(store):
    rule = Megram(
        level="C",
        space="global:user",
        entity=ENTITY,
        content="Never use sudo.",
        state="user-injected",
        f=1.0,
        sigma=1.0,
        k=0.0,
        created_at=T0,
    )
    persona = rule.model_copy(
        update={"level": "T", "content": "Answer in French.", "created_at": T1}
    )
    store.write_many([rule, persona])
    assert [m.content for m in store.query_rules("global:user", ENTITY)] == [
        "Answer in French.",
        "Never use sudo.",
    ]
    assert [m.content for m in store.query_c("global:user", ENTITY)] == [
        "Never use sudo."
    ]


# -- failed (tool, target) pairs --------------------------------------------------


def test_a_logical_failure_makes_its_target_avoided_for_every_task(store):
    store.write(failure("shell", "cloc .", "change_approach"))
    (signal,) = store.target_signals(["shell", "glob"], now=T0)
    assert (signal.tool, signal.target, signal.action) == ("shell", "cloc .", "Avoid")
    assert signal.decision == pytest.approx(-0.85)
    assert signal.content == "count lines: cloc: not found"
    assert (
        signal.megram_id == store.query_recent("tool:shell", "target:cloc .", 1)[0].id
    )


def test_repeated_environmental_failures_ask_for_caution(store):
    store.write(failure("fetch_url", "http://a.example/x", "change_path", "timed out"))
    assert store.target_signals([], now=T0) == []
    store.write(
        failure("fetch_url", "http://a.example/x", "change_path", "again", at=T1)
    )
    (signal,) = store.target_signals([], now=T1)
    assert (signal.action, signal.content) == ("Caution", "again")


def test_only_the_tools_a_round_may_use_are_read(store):
    store.write(failure("shell", "cloc .", "change_approach"))
    store.write(failure("search", "weather berlin", "change_approach"))
    assert [s.tool for s in store.target_signals(["search"], now=T0)] == ["search"]
    assert {s.tool for s in store.target_signals([], now=T0)} == {"shell", "search"}


def test_targets_the_intent_names_come_first_and_the_list_is_capped(store):
    for name in ("alpha.txt", "beta.txt", "gamma.txt"):
        store.write(failure("read_file", name, "change_approach"))
    named = store.target_signals([], limit=2, now=T0, intent="read gamma.txt aloud")
    assert [s.target for s in named] == ["gamma.txt", "alpha.txt"]
    assert [s.bears for s in named] == [True, False]


def test_a_target_bears_on_an_intent_that_names_one_of_its_files(store):
    store.write(failure("shell", "wc -l /tmp/s1/logs/app.log", "change_approach"))
    store.write(failure("shell", "cloc src", "change_approach"))
    found = store.target_signals(
        [], now=T0, intent="How many lines has /tmp/s9/logs/app.log?"
    )
    assert {s.target: s.bears for s in found} == {
        "wc -l /tmp/s1/logs/app.log": True,
        "cloc src": False,
    }


def test_a_success_signal_or_a_faded_failure_is_no_rule(store):
    store.write(failure("shell", "ls", "break_symmetry"))
    store.write(failure("shell", "cloc .", "change_approach"))
    assert [s.target for s in store.target_signals([], now=T0)] == ["cloc ."]
    assert store.target_signals([], now=T0 + timedelta(days=40)) == []


def test_a_bar_in_a_target_is_read_back_unescaped(store):
    store.write(failure("shell", "ls | wc -l", "change_approach"))
    (signal,) = store.target_signals([], now=T0)
    assert signal.target == "ls | wc -l"


# -- related past tasks ----------------------------------------------------------


def test_a_related_task_is_found_under_another_task_id(store):
    store.index_intent("intent:list_python_files", "List the Python files in src")
    store.write(experience("intent:list_python_files"))
    (hit,) = store.related_intents("intent:find_py_sources", "find python files in src")
    assert hit.space == "intent:list_python_files"
    assert hit.intent == "List the Python files in src"
    assert hit.score >= 0.5


def test_unrelated_tasks_and_tasks_without_experience_are_not_related(store):
    store.index_intent("intent:weather", "What is the weather in Berlin today")
    store.write(experience("intent:weather"))
    store.index_intent("intent:pending", "find python files in src")
    assert store.related_intents("intent:other", "find python files in src") == []


def test_a_task_is_not_related_to_itself_and_the_best_match_comes_first(store):
    for space, intent in (
        ("intent:a", "count python files in src"),
        ("intent:b", "count the python files in the src folder recursively"),
        ("intent:self", "count python files in src"),
    ):
        store.index_intent(space, intent)
        store.write(experience(space))
    hits = store.related_intents("intent:self", "count python files in src", limit=5)
    assert [h.space for h in hits] == ["intent:a", "intent:b"]
    assert hits[0].score == 1.0


def test_chinese_intents_match_on_character_pairs(store):
    store.index_intent("intent:task_1a2b3c4d", "列出所有的图片文件")
    store.write(experience("intent:task_1a2b3c4d"))
    (hit,) = store.related_intents("intent:task_9f8e7d6c", "列出图片文件")
    assert hit.intent == "列出所有的图片文件"


def test_index_words_drop_stop_words_and_plural_s():
    assert words_of("List all the Files in /src, please") == {"list", "file", "src"}
    assert words_of("pass the class") == {"pass", "class"}


def test_a_path_counts_by_its_last_part():
    assert words_of("Read /var/tmp/s-20261128/db/config.yaml") == {
        "read",
        "config",
        "yaml",
    }
    assert words_of("Get http://127.0.0.1:9/exports/prices.csv") == {"price", "csv"}


def test_the_same_task_on_another_directory_is_related(store):
    # Control bench, second pass: R1 named the task anew and its first intent
    # held the session's directory, whose words kept the score under 0.5.
    first = (
        "Retrieve the value of `max_connections` from the configuration file "
        "`db/config.yaml` located in the directory "
        "`/var/tmp/artoo-bench-control/20261128-100525-13020/ggs/renamed-file/`."
    )
    store.index_intent("intent:get_config_value", first)
    store.write(experience("intent:get_config_value"))
    again = "Find the value of `max_connections` in the specified configuration file."
    (hit,) = store.related_intents("intent:find_max_connections", again)
    assert hit.space == "intent:get_config_value"


def test_the_index_survives_reopening(tmp_path):
    path = tmp_path / "memory.leveldb"
    with MegramStore(path) as store:
        store.index_intent("intent:a", "rotate the nginx logs")
        store.write(experience("intent:a"))
    with MegramStore(path) as store:
        (hit,) = store.related_intents("intent:b", "rotate nginx logs weekly")
    assert hit.space == "intent:a"
