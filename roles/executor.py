"""R3 Executor: carry out one subtask with the Toolbox and report the evidence.

With a model: the tool loop (``roles.toolloop``) over the toolbox's tools, at
most ``max_turns`` model turns; a call identical to the previous one is blocked
once with a warning and a second repeat fails the attempt, and so is a call that
starts a second lap of a cycle of calls whose results did not change
(``roles.call_laps``); a first ``failed``
answer, or one without evidence, given while turns remain is sent back once
(``roles.executor_review``). A long tool result the model has used is
shortened in the conversation to a digest, its head and tail
(``roles.toolloop_digest``); the toolbox's records and evidence are not.
The final message is ``{"status": "completed|uncertain|failed", "output": …}``;
anything else is kept as an ``uncertain`` result with the raw text as output.
The prompt and the messages of an attempt are in ``roles.executor_prompts``.

Offline: the subtask's ``intent`` is the exact command line (the offline planner
also puts ``command: <line>`` in ``context``); it runs through the same shell
tool and Law 1 gate. ``completed`` when it ran, whatever its exit code (R4a
judges); ``failed`` when it was refused, denied, timed out or cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roles.contracts import CorrectionSignal, ExecutionResult, SubTask
from roles.executor_prompts import build_messages
from roles.executor_review import reviewer
from roles.llm.client import LLMCancelled, LLMError, Usage
from roles.llm.jsonparse import JSONExtractError, extract_json
from roles.llm.offline import OfflineModel
from roles.repeat_guard import RepeatGuard
from roles.toolloop import run_tool_loop
from roles.tools import Toolbox, ToolRecord, head_tail
from roles.tools.errors import ToolError, ToolPaused

STATUSES = ("completed", "uncertain", "failed")
# The final answer, where an endpoint decodes replies against a schema.
FINAL_SCHEMA = {
    "type": "object",
    "properties": {"status": {"enum": list(STATUSES)}, "output": {}},
    "required": ["status", "output"],
}
RESULT_CAP = 100_000


@dataclass
class Execution:
    """One attempt of R3: its result, model usage and the tool calls it made.

    ``error`` names an infrastructure failure (the model endpoint failed).
    """

    result: ExecutionResult
    usage: Usage | None
    calls: list[ToolRecord] = field(default_factory=list)
    error: str = ""


def execute(
    subtask: SubTask,
    *,
    model: Any,
    toolbox: Toolbox,
    correction: CorrectionSignal | None = None,
    prior_outputs: str = "",
    attempt: int = 1,
    max_turns: int = 10,
    resume: dict | None = None,
    again: bool = False,
) -> Execution:
    """Run one attempt of ``subtask`` and return its Execution.

    An attempt that answers a correction, or one ``again`` (a second
    derivation), is sampled at the settings' ``retry_temperature``.

    Raises LLMCancelled when the run is cancelled; other model failures become a
    ``failed`` result that keeps the tool calls made so far. A call that waits on
    the operator raises ToolPaused with this attempt's state in
    ``state["executor"]``; ``resume`` takes that state back and carries on.
    """
    if attempt < 1 or max_turns < 1:
        raise ValueError(f"attempt and max_turns must be ≥ 1 ({attempt}, {max_turns})")
    resume = resume or {}
    start = resume.get("start", len(toolbox.records))
    try:
        if isinstance(model, OfflineModel):
            status, output, note = _run_offline(subtask, model, toolbox)
            usage, error = None, ""
        else:
            # A resumed attempt carries on its own conversation.
            messages = (
                []
                if "loop" in resume
                else build_messages(
                    subtask,
                    toolbox,
                    correction,
                    prior_outputs,
                    attempt,
                    max_turns,
                    cookbook=model.settings.cookbook,
                )
            )
            review = reviewer(
                subtask,
                lambda: toolbox.evidence[start:],
                [spec.name for spec in toolbox.specs()],
            )
            advice = correction.what_was_wrong if correction is not None else ""
            status, output, note, usage, error = _run_model(
                messages,
                model,
                toolbox,
                max_turns,
                resume,
                review,
                advice,
                act_first=correction is not None,
                warmer=again or correction is not None,
            )
    except ToolPaused as paused:
        paused.state["executor"] = {**paused.state.get("executor", {}), "start": start}
        raise
    result = ExecutionResult(
        subtask_id=subtask.subtask_id,
        status=status,
        output=head_tail(output, RESULT_CAP) if isinstance(output, str) else output,
        uncertainty=note,
        tool_calls=toolbox.evidence[start:],
    )
    return Execution(result, usage, list(toolbox.records[start:]), error)


def _run_offline(subtask: SubTask, model: OfflineModel, toolbox: Toolbox):
    model.pause()
    command = subtask.intent.strip()
    try:
        toolbox.call("shell", {"command": command})
        output = toolbox.records[-1].output
        status = "failed" if output.startswith("[LAW1]") else "completed"
    except ToolError as err:
        status, output = "failed", f"ERROR: {err}"
    if toolbox.is_cancelled():
        raise LLMCancelled(f"run cancelled during subtask {subtask.subtask_id}")
    return status, output, None


def _run_model(
    messages,
    model,
    toolbox: Toolbox,
    max_turns,
    resume,
    review,
    advice,
    act_first,
    warmer=False,
):
    """Run the tool loop; an attempt that answers a correction (``act_first``)
    calls a tool before it may answer: a claim alone passes no verifiable
    criterion, and a small model re-states its claim instead of acting."""
    warm = model.settings.retry_temperature if warmer else None
    metered = _Metered(model, warm)
    guard = RepeatGuard(toolbox.call, resume.get("guard"), advice)
    try:
        loop = run_tool_loop(
            metered,
            messages,
            toolbox.specs(),
            guard,
            max_turns=max_turns,
            final_schema=FINAL_SCHEMA,
            resume=resume.get("loop"),
            review=review,
            act_first=act_first,
            shorten_used=True,
        )
    except ToolPaused as paused:
        loop_state = paused.state.pop("loop")
        paused.state["executor"] = {"guard": guard.state(), "loop": loop_state}
        paused.usage = metered.usage
        raise
    except LLMError as err:
        said = f"LLM error: {err}"
        return "failed", said, said, metered.usage, str(err)
    if loop.exhausted:
        said = f"no final answer within {max_turns} model turns; the attempt stopped"
        return "failed", said, said, loop.usage, ""
    status, output, note = parse_final(loop.final_content or "")
    return status, output, note, loop.usage, ""


def parse_final(text: str) -> tuple[str, Any, str | None]:
    """Return ``(status, output, uncertainty)`` of the model's final message."""
    try:
        value = extract_json(text)
    except JSONExtractError:
        return "uncertain", text, "the final message was not the JSON result"
    if not isinstance(value, dict) or value.get("status") not in STATUSES:
        return "uncertain", text, "the final message had no valid status"
    note = value.get("uncertainty")
    return value["status"], value.get("output"), None if note is None else str(note)


class _Metered:
    """Pass model calls through and sum their usage, kept even if the loop fails;
    with ``temperature``, every call is sampled at it."""

    def __init__(self, client: Any, temperature: float | None = None):
        self._client = client
        self._temperature = temperature
        self.usage = Usage()

    def chat(self, *args: Any, **kwargs: Any):
        """Send one chat request and add its usage."""
        if self._temperature is not None:
            kwargs["temperature"] = self._temperature
        reply = self._client.chat(*args, **kwargs)
        self.usage += reply.usage
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
