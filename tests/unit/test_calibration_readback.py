"""Calibration reads back what memory holds beyond the task's own pair.

Targets and related tasks are given as R5 sends them, plain JSON objects.
"""

from __future__ import annotations

from roles.contracts import Megram, MemoryRecall
from roles.planning.calibration import calibrate


def megram(content, *, space="intent:t", level="M", state="accept", id_=""):
    return Megram(
        id=id_,
        level=level,
        space=space,
        entity="env:local",
        content=content,
        state=state,
        f=1.0,
        sigma=1.0,
        k=0.0 if level == "C" else 0.05,
    )


def signal(target, action="Avoid", tool="shell", content="cloc: not found", bears=True):
    return {
        "bears": bears,
        "tool": tool,
        "target": target,
        "action": action,
        "attention": 0.85,
        "decision": -0.85 if action == "Avoid" else 0.0,
        "megram_id": "abcdef0123",
        "content": content,
    }


def recall(**fields):
    return MemoryRecall(task_id="t", space="intent:t", entity="env:local", **fields)


def test_what_the_operator_remembered_is_injected_first_and_never_fed_back():
    operator = [
        megram("Never use sudo.", space="global:user", level="C", id_="op1"),
        megram("Answer in French.", space="global:user", state="user-injected"),
    ]
    sops = [megram("Use find, not ls -R.", level="C", id_="sop1")]
    result = calibrate(recall(operator=operator, sops=sops))
    text = result.text
    assert text.startswith(
        "OPERATOR RULES (remembered by the operator — obey these):\n"
        "  - Never use sudo.\n  - Answer in French.\n"
    )
    assert text.index("OPERATOR RULES") < text.index("Use find, not ls -R.")
    assert result.operator == ["Never use sudo.", "Answer in French."]
    assert result.injected_sops == ["sop1"]


def test_failed_targets_are_must_not_and_mixed_ones_caution():
    targets = [
        signal("cloc ."),
        signal("http://a.example/x", "Caution", "fetch_url", "timed out"),
    ]
    result = calibrate(recall(targets=targets))
    assert result.must_not == ["shell: cloc . — cloc: not found"]
    assert result.caution == ["fetch_url: http://a.example/x — timed out"]
    assert "tool layer refuses them" in result.text
    assert "the operator is asked before each use" in result.text


def test_a_target_another_task_failed_on_is_refused_but_not_told():
    # One account, unrelated tasks in a row: another task's failed command in
    # the plan's MUST NOT block taught the planner that task's steps.
    targets = [
        signal("cat /srv/old/report.csv", bears=False),
        signal("wc -l /srv/new/notes.txt"),
        signal("http://a.example/x", "Caution", "fetch_url", "timed out", False),
    ]
    result = calibrate(recall(targets=targets))
    assert result.must_not == ["shell: wc -l /srv/new/notes.txt — cloc: not found"]
    assert result.caution == []
    assert "report.csv" not in result.text


def test_at_most_five_avoided_targets_are_listed_outside_the_memory_cap():
    sops = [megram(f"rule {i}", level="C") for i in range(10)]
    targets = [signal(f"cmd {i}") for i in range(7)]
    result = calibrate(recall(sops=sops, targets=targets))
    assert [t for t in result.must_not if t.startswith("shell:")] == [
        f"shell: cmd {i} — cloc: not found" for i in range(5)
    ]
    assert len(result.should_prefer) == 10


def test_a_related_task_s_example_names_its_files_by_their_last_part():
    related = [{"space": "intent:count", "intent": "count lines of a file", "score": 1}]
    worked = (
        "Succeeded. Worked: shell:wc -l /tmp/run-7/count-lines/app.log → "
        "137 /tmp/run-7/count-lines/app.log; read_file:/srv/x/notes.txt → a; "
        "fetch_url:https://ex.org/a/b → ok."
    )
    own = megram(worked)
    recent = [megram(worked, space="intent:count"), own]
    result = calibrate(recall(recent=recent, related=related))
    assert result.should_prefer == [
        "Succeeded. Worked: shell:wc -l app.log → 137 app.log; "
        "read_file:notes.txt → a; "
        "fetch_url:https://ex.org/a/b → ok. (from the related task: count lines "
        "of a file)",
        worked,
    ]


def test_experience_of_a_related_task_names_that_task():
    related = [{"space": "intent:list_py", "intent": "list python files", "score": 1}]
    recent = [megram("Succeeded. Tools: glob:**/*.py", space="intent:list_py")]
    result = calibrate(recall(recent=recent, related=related))
    assert result.should_prefer == [
        "Succeeded. Tools: glob:**/*.py (from the related task: list python files)"
    ]
