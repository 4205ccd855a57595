"""R2's memory calibration: blocks, order, cap and the directive's MUST NOTs."""

from __future__ import annotations

from roles.contracts import Loss, Megram, MemoryRecall, PlanDirective
from roles.planning.calibration import (
    BLOCKED_TARGETS,
    BLOCKED_TOOLS,
    MAX_MEMORY_ENTRIES,
    RECENT_MUST_NOT,
    RECENT_PREFER,
    SOP_MUST_NOT,
    SOP_PREFER,
    calibrate,
)


def megram(content, *, level="M", state="accept", sigma=1.0, id_=""):
    return Megram(
        id=id_,
        level=level,
        space="intent:t",
        entity="env:local",
        content=content,
        state=state,
        f=0.9,
        sigma=sigma,
        k=0.05,
    )


def recall(sops=(), recent=(), action="Ignore", available=True):
    return MemoryRecall(
        task_id="t",
        space="intent:t",
        entity="env:local",
        sops=list(sops),
        recent=list(recent),
        action=action,
        available=available,
    )


def directive(tools=(), targets=()):
    return PlanDirective(
        task_id="t",
        loss=Loss(D=1.0, P=0.5, Omega=0.2, L=0.7),
        prev_directive="init",
        directive="change_approach",
        blocked_tools=list(tools),
        blocked_targets=list(targets),
        failure_class="logical",
        budget_pressure=0.2,
        grad_l=0.0,
    )


def test_no_memory_and_no_directive_gives_empty_calibration():
    result = calibrate(None)
    assert result.text == ""
    assert result.must_not == result.should_prefer == result.caution == []


def test_sops_split_by_sign_with_must_not_first():
    sops = [
        megram("Use find, not ls -R.", level="C", sigma=1.0, id_="good"),
        megram("Never parse ls output.", level="C", sigma=-1.0, id_="bad"),
        megram("Neutral rule.", level="C", sigma=0.0, id_="zero"),
    ]
    result = calibrate(recall(sops=sops))
    assert result.must_not == ["Never parse ls output.", "Neutral rule."]
    assert result.should_prefer == ["Use find, not ls -R."]
    assert result.text.index(SOP_MUST_NOT) < result.text.index(SOP_PREFER)
    assert "  - Never parse ls output.\n" in result.text
    assert result.injected_sops == ["good", "bad", "zero"]


def test_recent_experience_by_terminal_state():
    recent = [
        megram("grep -r worked", state="success"),
        megram("curl timed out", state="abandon", sigma=-1.0),
        megram("shell: {} → error", state="refine", sigma=-0.1),
    ]
    result = calibrate(recall(recent=recent))
    assert result.must_not == ["curl timed out"]
    assert result.should_prefer == ["grep -r worked"]
    assert RECENT_MUST_NOT in result.text and RECENT_PREFER in result.text
    assert "shell: {}" not in result.text


def test_potentials_speak_only_when_memory_gives_no_entry():
    avoid = calibrate(recall(action="Avoid"))
    assert avoid.must_not == ["Do not repeat the approach that failed previously."]
    caution = calibrate(recall(action="Caution"))
    assert caution.caution == ["Validate each step carefully before committing."]
    with_entry = calibrate(recall(recent=[megram("ok")], action="Avoid"))
    assert with_entry.must_not == []


def test_memory_entries_are_capped_at_ten():
    sops = [megram(f"rule {i}", level="C", sigma=1.0) for i in range(7)]
    recent = [megram(f"run {i}") for i in range(7)]
    result = calibrate(recall(sops=sops, recent=recent))
    total = len(result.must_not) + len(result.should_prefer) + len(result.caution)
    assert total == MAX_MEMORY_ENTRIES
    assert "rule 6" in result.text and "run 2" in result.text
    assert "run 3" not in result.text


def test_must_not_is_memory_avoid_plus_blocked_tools_and_targets():
    sops = [megram("Never parse ls output.", level="C", sigma=-1.0)]
    result = calibrate(
        recall(sops=sops),
        directive(tools=["glob", "shell:wc"], targets=["ls /missing"]),
    )
    assert result.must_not == [
        "Do not use this specific query/command/path again: ls /missing",
        "Do not use tool: glob",
        "Do not use tool: wc (in the shell)",
        "Never parse ls output.",
    ]
    text = result.text
    assert text.index(BLOCKED_TARGETS) < text.index(BLOCKED_TOOLS)
    assert text.index(BLOCKED_TOOLS) < text.index(SOP_MUST_NOT)


def test_directive_blocks_are_never_cut_by_the_memory_cap():
    tools = [f"tool{i}" for i in range(12)]
    sops = [megram(f"rule {i}", level="C", sigma=-1.0) for i in range(12)]
    result = calibrate(recall(sops=sops), directive(tools=tools))
    assert len(result.must_not) == 12 + MAX_MEMORY_ENTRIES


def test_unavailable_memory_injects_nothing():
    result = calibrate(recall(recent=[megram("ok")], available=False))
    assert result.text == ""
