"""The offline model's line parsing and the Dreamer's offline distiller."""

from __future__ import annotations

import pytest

from roles.llm.offline import distil
from roles.llm.offline_roles import command_lines


def test_command_lines_ignore_blank_lines_and_a_leading_ampersand():
    lines = command_lines("\n& first\n   \nsecond\n")
    assert [(c.command, c.sequence) for c in lines] == [("first", 1), ("second", 2)]


def test_distil_writes_a_rule_from_the_most_frequent_content():
    rule = distil(
        "intent:list_files",
        "env:local",
        "Best Practice",
        4.2,
        ["used find .", "used ls -R", "used find ."],
    )
    assert rule.startswith("Prefer the approach that worked for list_files")
    assert "used find ." in rule and "ls -R" not in rule
    assert "2 of 3" in rule and "+4.2" in rule
    assert rule.count(". ") <= 2


def test_distil_is_deterministic_and_signs_constraints():
    args = ("intent:t", "env:local", "Constraint", -3.5, ["curl timed out"])
    assert distil(*args) == distil(*args)
    assert distil(*args).startswith("Avoid the approach that failed for t")


def test_distil_rejects_an_unknown_signal():
    with pytest.raises(ValueError, match="signal"):
        distil("intent:t", "env:local", "Maybe", 0.0, [])
