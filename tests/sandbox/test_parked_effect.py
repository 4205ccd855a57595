"""A command's effect parked for the operator is applied later exactly as at once.

The toolbox's operator parks (raises ToolPaused); the pending effect goes
through JSON, as it does through the database, and a new toolbox settles it.
"""

from __future__ import annotations

import json

import pytest

from roles.tools.errors import ToolError, ToolPaused
from tests.sandbox.conftest import make_toolbox, prepare, snapshot
from tests.unit.test_tools_toolbox import Operator

COMMANDS = [
    "rm victim.txt",
    "sed -i s/precious/lost/ victim.txt",
    "mv other.txt victim.txt",
    "chmod 000 victim.txt",
    "rm -r data",
    "ln -sf other.txt victim.txt",
    "rm victim.txt && mkdir victim.txt",
    "touch other.txt && rm victim.txt && echo new > fresh.txt",
]


def park(policy, workspace, command: str) -> dict:
    """Run ``command`` with an operator who parks; return its pending call."""

    def parks(ask):
        raise ToolPaused()

    toolbox = make_toolbox(policy, workspace, parks)
    with pytest.raises(ToolPaused) as paused:
        toolbox.call("shell", {"command": command})
    return json.loads(json.dumps(paused.value.pending))


def settle(policy, workspace, command: str, pending: dict, approved: bool) -> str:
    asked = Operator(decision=True)
    toolbox = make_toolbox(policy, workspace, asked)
    toolbox.settle(pending, approved)
    output = toolbox.call("shell", {"command": command})
    assert asked.asks == [], "a settled call is not asked again"
    assert toolbox.records[-1].output == output
    return output


@pytest.mark.parametrize("command", COMMANDS)
def test_an_approved_parked_effect_is_the_effect_applied_at_once(policy, base, command):
    direct, later = base / "direct", base / "later"
    prepare(direct)
    prepare(later)
    make_toolbox(policy, direct, Operator(decision=True)).call(
        "shell", {"command": command}
    )
    pending = park(policy, later, command)
    assert pending["kind"] == "effect" and pending["ask"]["changes"]
    assert snapshot(later) != snapshot(direct), "nothing is applied while parked"

    settle(policy, later, command, pending, approved=True)

    assert snapshot(later) == snapshot(direct)
    assert not (later.parent / pending["scratch"]).exists()


@pytest.mark.parametrize("command", COMMANDS[:3])
def test_a_denied_parked_effect_changes_nothing(policy, base, command):
    workspace = base / "ws"
    prepare(workspace)
    before = snapshot(workspace)
    pending = park(policy, workspace, command)

    output = settle(policy, workspace, command, pending, approved=False)

    assert output.startswith("[LAW1]") and "nothing was changed" in output
    assert snapshot(workspace) == before


def test_a_parked_effect_on_a_file_changed_meanwhile_is_refused(policy, base):
    workspace = base / "ws"
    prepare(workspace)
    pending = park(policy, workspace, "sed -i s/precious/lost/ victim.txt")
    (workspace / "victim.txt").write_text("edited by hand\n")

    with pytest.raises(ToolError, match="changed while the command's effect waited"):
        settle(
            policy,
            workspace,
            "sed -i s/precious/lost/ victim.txt",
            pending,
            approved=True,
        )

    assert (workspace / "victim.txt").read_text() == "edited by hand\n"
