"""Memory's Avoid and Caution pairs at the tool layer, as the run state keeps them."""

from __future__ import annotations

import pytest

from roles.memory_contracts import TargetSignal
from roles.runstate import RunState
from roles.tools import Toolbox, ToolError
from tests.unit.test_tools_toolbox import Operator


def signal(target, action="Avoid", tool="shell"):
    return TargetSignal(
        tool=tool,
        target=target,
        action=action,
        attention=0.85,
        decision=-0.85 if action == "Avoid" else 0.0,
        megram_id="1f2e3d4c-aaaa",
        content="count lines: touch: read-only file system",
    )


def rules_of(*signals):
    """Return the rules as the executor reads them: from the stored run state."""
    stored = RunState(memory_targets=list(signals)).model_dump_json()
    return RunState.model_validate_json(stored).memory_rules()


def test_an_avoided_target_is_refused_saying_memory_refused_it(tmp_path):
    toolbox = Toolbox(tmp_path, memory_rules=rules_of(signal("touch ran")))
    with pytest.raises(ToolError) as err:
        toolbox.call("shell", {"command": "touch ran"})
    message = str(err.value)
    assert message.startswith("avoided by memory: shell 'touch ran' failed in earlier")
    assert "tool:shell / target:touch ran (Megram 1f2e3d4c" in message
    assert message.endswith("— choose another approach")
    assert not (tmp_path / "ran").exists()
    assert toolbox.evidence[0].startswith('shell: {"command": "touch ran"} → ERROR:')
    assert toolbox.call("shell", {"command": "touch other"}).startswith("[exit code 0]")


def test_an_avoided_pair_belongs_to_its_tool(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    toolbox = Toolbox(tmp_path, memory_rules=rules_of(signal("notes.txt")))
    assert toolbox.call("read_file", {"path": "notes.txt"}) == "hello"


def test_a_caution_target_is_put_to_the_operator_naming_the_memory_entry(tmp_path):
    operator = Operator(decision=False)
    toolbox = Toolbox(
        tmp_path,
        approve=operator,
        memory_rules=rules_of(signal("touch ran", "Caution")),
    )
    with pytest.raises(ToolError, match="memory caution: .* denied by the operator"):
        toolbox.call("shell", {"command": "touch ran"})
    assert not (tmp_path / "ran").exists()
    (ask,) = operator.asks
    assert (ask.tool, ask.command) == ("shell", "touch ran")
    assert ask.reason.startswith("memory Caution for tool:shell / target:touch ran")
    assert "Megram 1f2e3d4c" in ask.reason
    # The operator is told memory asks, not Law 1: a careful one decides apart.
    assert ask.gate == "memory"


def test_an_approved_caution_target_runs(tmp_path):
    operator = Operator(decision=True)
    toolbox = Toolbox(
        tmp_path,
        approve=operator,
        memory_rules=rules_of(signal("touch ran", "Caution")),
    )
    assert toolbox.call("shell", {"command": "touch ran"}).startswith("[exit code 0]")
    assert (tmp_path / "ran").exists()
    assert len(operator.asks) == 1


def test_a_run_state_without_memory_targets_has_no_rules():
    rules = RunState().memory_rules()
    assert (dict(rules.avoid), dict(rules.caution)) == ({}, {})
