"""The merged result R4b delivers on an accept, and the evidence it names.

The model's merge stands only where the subtasks' outputs or tool calls show
every fact it states (numbers and path-like words, what a small model invents);
otherwise the subtasks' own outputs, which passed R4a, are delivered. The
summary ends with a note naming the round's first successful tool calls::

    Evidence: shell `wc -l data.txt`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from roles.claims.evidence import (
    ToolCall,
    is_failed_call,
    parse_evidence,
    split_exit_code,
)
from roles.claims.facts import FACT, appears
from roles.contracts import SubTaskOutcome
from roles.planning.prompts import output_text
from roles.toolclass import cut_call


def grounded(merged: Any, outcomes: Sequence[SubTaskOutcome]) -> Any:
    """Return the model's merge when every fact it states is in the subtasks'
    outputs or evidence; else the subtasks' own outputs (they passed R4a).

    Facts are numbers and path-like words: what a small model invents.
    """
    own = "\n".join(t for t in (output_text(o.output) for o in outcomes) if t)
    if merged is None or merged == "":
        return own
    text = merged if isinstance(merged, str) else json.dumps(merged, default=str)
    sources = "\n".join([own, *(e for o in outcomes for e in o.tool_calls)])
    if all(appears(fact, sources) for fact in FACT.findall(text)):
        return merged
    return own


def evidence_note(outcomes: Sequence[SubTaskOutcome], limit: int = 3) -> str:
    """Return "Evidence: …" naming the first successful tool calls of the round.

    A shell command succeeded when it exited 0 (what it printed is data, even a
    line saying "error:"); a file or web tool when it did not answer ERROR.
    """
    named = []
    for entry in (e for o in outcomes for e in o.tool_calls):
        call = parse_evidence(entry)
        if call is None or not _succeeded(call):
            continue
        whole = f"{call.tool} `{call.target}`" if call.target else call.tool
        named.append(cut_call(call) or whole)
        if len(named) == limit:
            break
    return f"Evidence: {'; '.join(named)}." if named else ""


def _succeeded(call: ToolCall) -> bool:
    code, _ = split_exit_code(call.output)
    if code is not None:
        return code == 0
    return not is_failed_call(call)
