"""A parked subtask's stored state reads back and is stored again unchanged."""

from __future__ import annotations

import copy
import json

from roles.contracts import SubTask
from roles.executor_state import ParkedSubtask, Work
from roles.tools import ToolRecord

SUBTASK = {
    "subtask_id": "3c59a85c-8aaf-4c1b-af2b-cef93c92d44d",
    "parent_task_id": "check_the_server",
    "intent": "ok-step remove the notes",
    "success_criteria": [
        "it works",
        {
            "criterion": "exit status 0",
            "mode": "verifiable",
            "check": {"type": "exit_code", "value": 0},
        },
    ],
    "context": "",
    "deadline": None,
    "sequence": 2,
}
CHANGE = {
    "kind": "deleted",
    "path": "/w/notes.txt",
    "size_before": 5,
    "size_after": None,
    "diff": "",
}
ASK = {
    "tool": "shell",
    "command": "rm notes.txt",
    "args": {"command": "rm notes.txt"},
    "reason": "the command deleted 1 existing file (rm deletes files permanently)",
    "changes": [CHANGE],
}
# As the executor handler stored a model executor's pause before these models.
STORED = {
    "subtask": SUBTASK,
    "prior": "- cat doomed.txt: [exit code 0]\nseed\n",
    "evidence": ['shell: {"command": "cat notes.txt"} → [exit code 0]\nseed'],
    "executor": {
        "guard": [["shell", '{"command": "cat notes.txt"}'], 0, [], 0],
        "loop": {
            "turn": 2,
            "protocol": "native",
            "convo": [{"role": "user", "content": "Execute this SubTask"}],
            "calls": [
                {
                    "name": "shell",
                    "args": {"command": "cat notes.txt"},
                    "output": "[exit code 0]\nseed\n",
                    "error": False,
                }
            ],
            "queue": [{"name": "shell", "args": {"command": "rm notes.txt"}}],
            "reviews": 0,
            "answer_only": False,
        },
        "start": 0,
    },
    "fastloop": {
        "attempt": 1,
        "trajectory": [],
        "correction": None,
        "earlier_calls": [],
    },
    "records": [
        {
            "name": "shell",
            "args": {"command": "cat notes.txt"},
            "output": "[exit code 0]\nseed\n",
            "error": False,
        }
    ],
    "made": {"wrote": {"/w/draft.txt": [33188, 2, 17, 17, 99, 0]}, "dropped": []},
    "pending": {
        "kind": "effect",
        "tool": "shell",
        "args": {"command": "rm notes.txt"},
        "ask": ASK,
        "output": "[exit code 0]\n",
        "scratch": "/var/tmp/sandbox/run/cmd-b2651566cca3",
        "effect": {"version": 2, "targets": ["/w"], "changes": [CHANGE]},
    },
}


def test_a_stored_parked_subtask_reads_back_and_is_stored_as_it_was():
    parked = ParkedSubtask.model_validate(copy.deepcopy(STORED))
    assert parked.subtask.subtask_id == SUBTASK["subtask_id"]
    assert parked.records == [
        ToolRecord("shell", {"command": "cat notes.txt"}, "[exit code 0]\nseed\n")
    ]
    assert parked.pending["kind"] == "effect" and parked.approved is False
    dumped = parked.model_dump(mode="json")
    assert list(dumped) == list(STORED)
    assert json.loads(json.dumps(dumped)) == STORED


def test_the_operators_answer_is_never_stored():
    parked = ParkedSubtask.model_validate(STORED).model_copy(update={"approved": True})
    assert parked.approved is True
    assert "approved" not in parked.model_dump(mode="json")


def test_a_parked_subtask_keeps_the_work_and_the_state_of_each_layer():
    work = Work(subtask=SubTask.model_validate(SUBTASK), prior="- earlier: ok")
    state = {key: STORED[key] for key in ("executor", "fastloop", "records", "made")}
    state["evidence"] = ["shell: own entry"]
    parked = ParkedSubtask.of(work, state, STORED["pending"])
    dumped = parked.model_dump(mode="json")
    assert set(dumped) == set(STORED)
    assert dumped["subtask"] == SUBTASK and dumped["prior"] == "- earlier: ok"
    # Once parked, the key holds the toolbox's entries (as it always has).
    assert dumped["evidence"] == ["shell: own entry"]
    assert dumped["executor"] == STORED["executor"]
    assert dumped["pending"] == STORED["pending"]


def test_an_older_kind_of_made_is_kept_as_stored():
    older = {**STORED, "made": ["an", "older", "list"]}
    parked = ParkedSubtask.model_validate(older)
    assert parked.model_dump(mode="json")["made"] == ["an", "older", "list"]


def test_unknown_keys_are_ignored_and_missing_layers_read_as_none():
    parked = ParkedSubtask.model_validate({"subtask": SUBTASK, "surplus": 1})
    assert (parked.executor, parked.fastloop, parked.pending) == (None, None, None)
    assert parked.evidence == [] and parked.records == []
    assert "surplus" not in parked.model_dump(mode="json")
