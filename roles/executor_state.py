"""What an executor task works on, and what it keeps while parked on the operator.

``Work`` is one subtask to run: the SubTask, the outputs of earlier sequence
groups (``prior``) and their tool evidence (``evidence``). ``ParkedSubtask`` is
a subtask whose call waits on Law 1's operator: its work plus the state each
layer the pause crossed put in ``ToolPaused.state``, stored as JSON on the
Approval row and read back when the operator answers. Its keys are those
stored since parking began, so a subtask parked before resumes after::

    {"subtask": {"subtask_id": "s1", ...}, "prior": "", "evidence": ["shell: …"],
     "executor": {"start": 0, "guard": [...], "loop": {...}},
     "fastloop": {"attempt": 1, "trajectory": [], "correction": null,
                  "earlier_calls": []},
     "records": [{"name": "shell", "args": {...}, "output": "…", "error": false}],
     "made": {"wrote": {}, "dropped": []},
     "pending": {"kind": "effect", "tool": "shell", "args": {...}, ...}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from roles.contract_base import Contract
from roles.contracts import SubTask
from roles.tools.records import ToolRecord

__all__ = ["ParkedSubtask", "Work"]


class Work(Contract):
    """One subtask to run, with the outputs and evidence of earlier groups."""

    subtask: SubTask
    prior: str = ""
    evidence: list[str] = Field(default_factory=list)


class ParkedSubtask(Work):
    """A subtask parked on the operator: its work and each layer's state.

    ``executor`` and ``fastloop`` belong to ``roles.executor`` and
    ``roles.fastloop``, which read them back; ``records``, ``evidence`` and
    ``made`` are the toolbox's calls, evidence entries and own files so far;
    ``pending`` is the call waiting on the operator. Once parked,
    ``evidence`` holds the toolbox's entries, in place of those of earlier
    groups: the key was stored so from the start, and is read back so.
    ``made`` is taken as stored (``Made.resume`` ignores an older kind).
    ``approved`` is the operator's answer, set from the Approval row on
    resume and never stored.
    """

    executor: dict[str, Any] | None = None
    fastloop: dict[str, Any] | None = None
    records: list[ToolRecord] = Field(default_factory=list)
    made: Any = None
    pending: dict[str, Any] | None = None
    approved: bool = Field(default=False, exclude=True)

    @classmethod
    def of(
        cls, work: Work, state: Mapping[str, Any], pending: dict | None
    ) -> ParkedSubtask:
        """Return the parked subtask: ``work``, the layers' ``state``, the call."""
        kept = work.model_dump(mode="json", include=set(Work.model_fields))
        return cls.model_validate({**kept, **state, "pending": pending})
