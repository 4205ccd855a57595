"""R3's texts: the system prompt, and the messages of one attempt with its correction.

The user message holds the SubTask as JSON, the outputs of earlier subtasks of
the task and, on a retry, the correction with the tool calls already made.
"""

from __future__ import annotations

import json
from typing import Any

from roles.contracts import CorrectionSignal, SubTask
from roles.cookbook import cookbook_text
from roles.toolclass import describe
from roles.tools import Toolbox, head_tail

PRIOR_CAP = 4000
PREVIOUS_CALLS = 10

SYSTEM_PROMPT = """You are R3, the Executor of artoo. You carry out exactly one \
subtask with tools and report what the tools showed.

Workspace (the shell's working directory and the root of relative paths): \
{workspace}
Tools: {tools}.{blocked}

Rules:
- Call one tool at a time and wait for its real result; never invent or predict \
tool output. The shell result starts with "[exit code N]".
- Every call is recorded as evidence. The validator checks each success \
criterion against the tool outputs, not against your claims.
- Let tools compute: count, sum, find and measure with a command that prints \
the result (wc -l, grep -c, awk, find, du), then report the number it printed; \
never count or add up by reading a file yourself.
- Never guess a path or a file name: find it first (glob, grep -rln, find) \
and read only files a tool showed you. A function, setting or word is found \
inside files: grep -rn 'NAME' DIR.
- One failed call is not failure: try another way before you report failed.
- Do not repeat a call with identical arguments: a repeat is blocked once, a \
second repeat ends your tool calls and you must answer from what you have.
- Destructive calls (deleting, overwriting) wait for the operator's approval. \
A "[LAW1] … denied by the operator" result means: do not do it; find another \
way or report failure.
- You have at most {max_turns} model turns. Answer as soon as the criteria are met.

{cookbook}When done, reply with only this JSON object, nothing before or after it:
{{"status": "completed|uncertain|failed", "output": <the result: the answer, \
data or file paths>}}
completed = done and shown by tool output; uncertain = genuinely ambiguous and \
no tool can settle it; failed = it cannot be done (say why in output)."""


def build_messages(
    subtask: SubTask,
    toolbox: Toolbox,
    correction: CorrectionSignal | None,
    prior_outputs: str,
    attempt: int,
    max_turns: int,
    cookbook: bool = True,
) -> list[dict[str, str]]:
    """Return the executor's system and user messages for one attempt;
    ``cookbook`` puts the standard commands in the system prompt."""
    names = ", ".join(s.name for s in toolbox.specs()) or "none"
    blocked = [describe(t) for t in sorted(toolbox.blocked_tools)]
    note = f" Blocked by GGS (do not try): {', '.join(blocked)}." if blocked else ""
    system = SYSTEM_PROMPT.format(
        workspace=toolbox.workspace,
        tools=names,
        blocked=note,
        max_turns=max_turns,
        cookbook=cookbook_text() if cookbook else "",
    )
    task = {
        "subtask_id": subtask.subtask_id,
        "intent": subtask.intent,
        "success_criteria": [_criterion_text(c) for c in subtask.success_criteria],
        "context": subtask.context,
    }
    parts = [f"Execute this SubTask:\n{json.dumps(task, ensure_ascii=False, indent=2)}"]
    if prior_outputs.strip():
        parts.append(
            "Outputs of earlier subtasks of this task (use them as input, do not "
            f"redo them):\n{head_tail(prior_outputs.strip(), PRIOR_CAP)}"
        )
    if correction is not None:
        earlier = toolbox.evidence[-PREVIOUS_CALLS:] if attempt > 1 else []
        parts.append(_correction_text(correction, attempt, earlier))
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _correction_text(correction: CorrectionSignal, attempt: int, earlier) -> str:
    calls = "\n".join(f"- {entry}" for entry in earlier) or "none"
    return (
        f"CORRECTION (this is attempt {attempt}): the previous attempt did not meet "
        "the success criteria. Re-execute using a DIFFERENT approach.\n"
        f"Failed criterion: {correction.failed_criterion or 'unspecified'}\n"
        f"Failure class: {correction.failure_class or 'unspecified'}\n"
        f"What was wrong: {correction.what_was_wrong or 'unspecified'}\n"
        f"What to do instead: {correction.what_to_do or 'unspecified'}\n"
        f"Previous tool calls (do not repeat these):\n{calls}"
    )


def _criterion_text(criterion: Any) -> str:
    return criterion if isinstance(criterion, str) else criterion.criterion
