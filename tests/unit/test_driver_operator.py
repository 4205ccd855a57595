"""The model tier's and the bench's operator: careful, and what it reports."""

from __future__ import annotations

from devtools.driver import decision_for, recalled


def test_a_careful_operator_approves_memory_s_caution_and_answers_law_1_as_told():
    assert decision_for({"gate": "memory"}, "deny") == "approve"
    assert decision_for({"gate": "law1"}, "deny") == "deny"
    assert decision_for({"gate": "law1"}, "approve") == "approve"
    # An approval from a server that names no gate is Law 1's.
    assert decision_for({}, "deny") == "deny"


def test_what_memory_gave_r2_is_named_once_per_item():
    recall = {
        "sops": [{"id": "1f2e3d4c-aaaa", "level": "C", "state": "success"}],
        "recent": [{"id": "9a8b7c6d-bbbb", "level": "M", "state": "abandon"}],
        "related": [
            {"space": "intent:x", "intent": "count lines of a.txt", "score": 1}
        ],
        "targets": [{"tool": "shell", "target": "wc -l a.txt", "action": "Avoid"}],
    }
    messages = [
        {"type": "MemoryQuery", "payload": {}},
        {"type": "MemoryRecall", "payload": recall},
        {"type": "MemoryRecall", "payload": recall},  # a replan recalls it again
    ]
    assert recalled(messages) == [
        "C success 1f2e3d4c",
        "M abandon 9a8b7c6d",
        "related task: count lines of a.txt",
        "Avoid shell wc -l a.txt",
    ]
    assert recalled([{"type": "MemoryRecall", "payload": {}}]) == []
