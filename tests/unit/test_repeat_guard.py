"""A call a GGS block refused is not asked for again: warned once, then the end."""

from __future__ import annotations

import pytest

from roles.repeat_guard import REFUSED_AGAIN, RepeatGuard
from roles.toolloop import AnswerNow
from roles.tools import Toolbox, ToolboxConfig, ToolError


def test_a_refused_call_asked_again_is_warned_then_ends_the_calls(tmp_path):
    # A real attempt asked for the blocked `find …` four times between listings.
    box = Toolbox(tmp_path, ToolboxConfig(blocked_tools=frozenset({"shell:find"})))
    guard = RepeatGuard(box.call)
    find = {"command": "find . -type f | wc -l"}
    with pytest.raises(ToolError, match="blocked by GGS"):
        guard("shell", find)
    assert guard("shell", {"command": "echo listed"}).strip().endswith("listed")
    assert guard("shell", find) == REFUSED_AGAIN.format(tool="shell")
    assert len(box.records) == 2  # the warning ran nothing
    with pytest.raises(AnswerNow, match="refused by a block again"):
        guard("shell", find)


def test_the_refused_calls_survive_a_pause_in_the_guards_state(tmp_path):
    box = Toolbox(tmp_path, ToolboxConfig(blocked_tools=frozenset({"glob"})))
    guard = RepeatGuard(box.call)
    with pytest.raises(ToolError):
        guard("glob", {"pattern": "*.py"})
    resumed = RepeatGuard(box.call, guard.state())
    assert resumed("glob", {"pattern": "*.py"}) == REFUSED_AGAIN.format(tool="glob")
    # A guard stored before refused calls were kept reads back as none refused.
    old = RepeatGuard(box.call, guard.state()[:4])
    assert old("glob", {"pattern": "*.py"}) != REFUSED_AGAIN.format(tool="glob")
