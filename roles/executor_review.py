"""R3's second look at its own final answer while turns remain.

A small model often reports failure right after its first failed call, even
when that call's result says what to do instead (a hint to use grep, a file of
the same name elsewhere); and it often reports a number it never had a tool
compute, or an answer without calling a tool at all. R4a fails such an answer,
and the next attempt starts over from nothing: the model reads the file again
and makes up the same number. So, once per attempt and while turns remain, the
executor's own loop sends such an answer back with R4a's reason, and the model
carries on in the conversation where it has already seen the data:

- ``failed``: with the last tool result, to try another way first. An
  operator's Law 1 denial is final and is never sent back;
- ``completed`` or ``uncertain`` that R4a's evidence rule would fail (no tool
  call succeeded; a number or path no tool output shows; a total no tool
  computed): with that rule's reason.

A second answer is taken as it is, and R4a judges it as always, unless it
only repeats the message (a small model copies "the claimed output states …"
as its output): that goes back once more with a short instruction to call a
tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from roles.agent_validator_judge import unsupported
from roles.claims.answer_rules import answer_form
from roles.claims.evidence_rules import COMPUTE, invented_facts
from roles.claims.evidence_rules import NO_EVIDENCE as NOT_EVIDENCE
from roles.claims.question import read_question
from roles.contracts import ExecutionResult, SubTask
from roles.llm.jsonparse import JSONExtractError, extract_json
from roles.toolloop import Review, ToolCallRecord
from roles.tools import head_tail

LAST_RESULT_CAP = 600
SEND_BACK = (
    "Not yet: you reported failed after {calls}, and you still have turns left. "
    "One failed call is not failure.{last} Follow any hint in it, or try a "
    "different command, path or tool. Report failed only when no tool can do it."
)
NO_EVIDENCE = (
    "Not yet: {why}. Your answer is checked against tool output only, and no "
    "tool output shows it yet. Do that now with a tool, then give your final "
    "JSON answer with what the tool printed."
)
PARROTED = (
    "That repeats the checker's message; it is not an answer. Call a tool now "
    "(the shell tool computes: awk -F, for a CSV column, wc -l, grep -c), then "
    "give your final JSON answer with what it printed."
)
# Phrases of the messages above and of R4a's reasons: an answer holding one
# copies the message instead of answering.
ECHOES = (NOT_EVIDENCE, "which no tool output shows", "checked against tool output")
# A missing file's error naming the one file of that name nearby.
ONE_ELSEWHERE = re.compile(r"; files named '[^']+' under [^:\n]+: ([^,\s]+)\s*$")
# A model told to compute a number tends to read the file once more.
USE_SHELL = (
    " Use the shell tool for it: read_file only shows the data, it computes nothing."
)


def reviewer(
    subtask: SubTask, evidence: Callable[[], Sequence[str]], tools: Sequence[str] = ()
) -> Review:
    """Return the review of ``subtask``'s final answers; ``evidence`` returns
    this attempt's calls as R4a will read them, ``tools`` names the tools the
    executor has."""

    def review(final: str, calls: Sequence[ToolCallRecord], reviews: int):
        answer = _answer(final)
        if reviews:
            return PARROTED if reviews == 1 and is_parroted(answer) else None
        if answer.get("status") == "failed":
            return review_failed(final, calls, reviews)
        if answer.get("status") not in ("completed", "uncertain"):
            return None
        result = ExecutionResult(
            subtask_id=subtask.subtask_id,
            status=answer["status"],
            output=answer.get("output"),
            tool_calls=list(evidence()),
        )
        why = (
            unsupported(result)
            or invented_facts(subtask, result)
            or _form(subtask, result)
        )
        if not why:
            return None
        computes = COMPUTE in why or "sum that column" in why
        shell = USE_SHELL if computes and "shell" in tools else ""
        return NO_EVIDENCE.format(why=why.rstrip(".")) + shell

    return review


def _form(subtask: SubTask, result: ExecutionResult) -> str:
    """Return why the answer is not in the form the subtask's words ask for (no
    number for a count, no name a tool showed for a name …), else ""."""
    asked = read_question(subtask.intent)
    return answer_form(asked, subtask.intent, result)[1]


def review_failed(
    final: str, calls: Sequence[ToolCallRecord], reviews: int
) -> str | None:
    """Return the message that sends a first ``failed`` back, else None."""
    if reviews or _answer(final).get("status") != "failed" or _denied(calls):
        return None
    count = f"{len(calls)} tool call{'' if len(calls) == 1 else 's'}"
    last = ""
    if calls:
        output = head_tail(calls[-1].output.strip(), LAST_RESULT_CAP)
        last = f" The last tool result ({calls[-1].name}):\n{output}\n"
    told = SEND_BACK.format(calls=count, last=last)
    elsewhere = ONE_ELSEWHERE.search(calls[-1].output) if calls else None
    if elsewhere and calls[-1].name == "read_file":
        path = json.dumps({"path": elsewhere.group(1)})
        told += f" The file is there: call read_file with {path} now."
    return told


def is_parroted(answer: dict[str, Any]) -> bool:
    """Return True when the answer's output copies a checker's message."""
    output = answer.get("output")
    text = output if isinstance(output, str) else str(output or "")
    said = " ".join(text.lower().split())
    return any(echo.lower() in said for echo in ECHOES)


def _answer(final: str) -> dict[str, Any]:
    try:
        value = extract_json(final)
    except JSONExtractError:
        return {}
    return value if isinstance(value, dict) else {}


def _denied(calls: Sequence[ToolCallRecord]) -> bool:
    return any(c.output.startswith("[LAW1]") and "denied" in c.output for c in calls)
