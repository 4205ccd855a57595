"""What each exported span of a run carries (``artoo_web.telemetry`` sends them).

Names follow the OpenTelemetry GenAI semantic conventions where they have one
(``gen_ai.*``, ``server.*``, ``error.type``) and live under ``artoo.*`` where
they do not. Nothing here reads a prompt, a reply, a request's words, a tool's
arguments or its output beyond the names of the programs a command runs::

    chat_attributes(client, "R3")
    # {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
    #  "gen_ai.agent.id": "R3", "gen_ai.agent.name": "Executor",
    #  "gen_ai.request.model": "qwen2.5", "server.address": "127.0.0.1", ...}
"""

from __future__ import annotations

import os.path
import re
from urllib.parse import urlsplit

from roles.tools.shell import parse_shell_output

AGENTS = {
    "R1": "Perceiver",
    "R2": "Planner",
    "R3": "Executor",
    "R4a": "Agent-Validator",
    "R4b": "Meta-Validator",
    "R5": "Memory",
    "R7": "GGS",
}
# A program's name as exported: a plain file name, never an expansion.
PROGRAM = re.compile(r"^[\w.+-]{1,64}$")
MAX_PROGRAMS = 10
# The loss terms of a GGS decision as its event names them.
LOSS_TERMS = (("D", "D"), ("P", "P"), ("Omega", "omega"), ("L", "L"))


def agent(role: str) -> dict:
    """Return the attributes that name the role a span belongs to."""
    return {"gen_ai.agent.id": role, "gen_ai.agent.name": AGENTS.get(role, role)}


def chat_attributes(model, role: str) -> dict:
    """Return what a model call's span carries before the call: the role, and
    the endpoint's model and host (never its key or path)."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        **agent(role),
    }
    endpoint = getattr(model, "endpoint", None)
    if endpoint is None:
        return attributes
    attributes["gen_ai.request.model"] = endpoint.model
    try:
        url = urlsplit(endpoint.base_url)
        if url.hostname:
            attributes["server.address"] = url.hostname
            attributes["server.port"] = url.port or (
                443 if url.scheme == "https" else 80
            )
    except ValueError:
        pass
    return attributes


def usage_attributes(reply) -> dict:
    """Return what a model call's span learns from its reply: token usage,
    the model that answered, why it stopped."""
    calls = getattr(getattr(reply, "usage", None), "calls", ())
    if not calls:
        return {}
    call = calls[-1]
    attributes = {
        "gen_ai.response.model": call.model,
        "gen_ai.usage.input_tokens": call.prompt_tokens,
        "gen_ai.usage.output_tokens": call.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": call.cached_tokens,
        "artoo.llm.mode": call.mode,
        "artoo.llm.attempts": call.attempts,
    }
    if getattr(reply, "finish_reason", None):
        attributes["gen_ai.response.finish_reasons"] = [reply.finish_reason]
    if call.cost_usd is not None:
        attributes["artoo.llm.cost_usd"] = float(call.cost_usd)
    return attributes


def tool_attributes(name, args, role: str) -> dict:
    """Return what a tool call's span carries: the tool's name and, for a
    shell command, the names of the programs it runs."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": str(name),
        **agent(role),
    }
    command = args.get("command") if isinstance(args, dict) else None
    if name == "shell" and isinstance(command, str):
        attributes["artoo.tool.programs"] = programs(command)
    return attributes


def programs(command: str) -> list[str]:
    """Return the names of the programs a shell command runs, in order, once
    each; a name that is not a plain file name (``$CMD``) is left out."""
    # The parser is loaded with the first command sent: the web process, which
    # runs none, never loads it.
    from roles.claims.command import parse_command

    names: list[str] = []
    for pipeline in parse_command(command).pipelines:
        for program in pipeline.programs:
            base = os.path.basename(program.name)
            if PROGRAM.match(base) and base not in names:
                names.append(base)
    return names[:MAX_PROGRAMS]


def result_attributes(name, output) -> dict:
    """Return what a tool call's span learns from its output: that Law 1's
    operator denied it (``[LAW1] … denied by the operator``), a shell
    command's exit code."""
    if isinstance(output, str) and output.startswith("[LAW1]"):
        return {"artoo.tool.denied": True}
    if name != "shell" or not isinstance(output, str):
        return {}
    code, _ = parse_shell_output(output)
    return {} if code is None else {"artoo.tool.exit_code": code}


def memory_attributes(recall) -> dict:
    """Return what a memory query's span learns from its MemoryRecall."""
    return {
        "gen_ai.memory.record.count": len(recall.sops)
        + len(recall.recent)
        + len(recall.operator),
        "artoo.memory.available": recall.available,
        "artoo.memory.action": recall.action,
    }


def run_attributes(run) -> dict:
    """Return the run span's attributes (never the request's words)."""
    return {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "artoo",
        "artoo.run.id": str(run.id),
        "artoo.run.status": run.status,
        "artoo.run.directive": run.directive,
        "artoo.run.control": run.control,
        "artoo.run.round": run.round,
        "artoo.run.tokens": run.tokens,
    }


def decision_attributes(type_: str, round_: int, payload: dict) -> dict:
    """Return a GGS decision's event attributes: the loss terms D, P, Ω (as
    ``omega``) and L, the directive, and the round it judged.

    R7 moves the run to its next round before it sends a PlanDirective, so a
    PlanDirective judged the round before its own; a FinalResult its own.
    """
    loss = payload.get("loss") or {}
    judged = round_ - 1 if type_ == "PlanDirective" else round_
    attributes = {
        "artoo.ggs.round": max(0, judged),
        "artoo.ggs.directive": str(payload.get("directive", "")),
        "artoo.ggs.prev_directive": str(payload.get("prev_directive", "")),
        "artoo.ggs.grad_l": float(payload.get("grad_l") or 0.0),
        "artoo.ggs.control": str(payload.get("control", "")),
    }
    for term, key in LOSS_TERMS:
        if loss.get(term) is not None:
            attributes[f"artoo.ggs.{key}"] = float(loss[term])
    if payload.get("blocked_tools"):
        attributes["artoo.ggs.blocked_tools"] = [
            str(t) for t in payload["blocked_tools"]
        ]
    return attributes
