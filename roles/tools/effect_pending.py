"""A Law 1 call waiting on the operator, as plain data any worker can settle.

When a subtask parks on an approval, what its call needs to be settled later is
stored with it: the tool, its arguments and the question put to the operator,
and for a sandboxed command its output, its Effect and the scratch whose upper
dirs hold the files it wrote::

    {"kind": "effect", "tool": "shell", "args": {"command": "rm a.txt"},
     "ask": {"tool": "shell", "command": "rm a.txt", "reason": "…", …},
     "output": "[exit code 0]\\n", "scratch": "/…/cmd-1a2b3c",
     "effect": {"version": 2, "targets": ["/…/ws"], "uppers": ["/…/upper0"],
                "changes": […], "ops": [["remove", 0, "a.txt"]],
                "stamps": [[0, "a.txt", [33188, 23, …]], [0, "", [131, …]]], …}}

An effect stored by an older version (absolute path strings, no version) is
refused, never applied: its paths would be followed through whatever they
became.

``kind`` "call" is a call gated before it ran (no sandbox, or ``write_file``
onto an existing file): approved, it runs when settled.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from roles.tools.effect import Change, Effect
from roles.tools.errors import ToolError
from roles.tools.sandbox import SandboxRun, remove_tree

EFFECT_VERSION = 2


def pending_call(ask: Any) -> dict:
    """Return a gated call that has not run, to run once approved."""
    return {
        "kind": "call",
        "tool": ask.tool,
        "args": dict(ask.args),
        "ask": asdict(ask),
    }


def pending_effect(ask: Any, done: SandboxRun) -> dict:
    """Return a sandboxed command whose effect waits: output, effect, scratch."""
    return {
        "kind": "effect",
        "tool": ask.tool,
        "args": dict(ask.args),
        "ask": asdict(ask),
        "output": done.output,
        "scratch": str(done.scratch),
        "effect": effect_to_data(done.effect),
    }


def sandbox_run(pending: dict) -> SandboxRun:
    """Return the finished command a pending effect holds."""
    scratch = Path(pending["scratch"])
    return SandboxRun(pending["output"], effect_from_data(pending["effect"]), scratch)


def discard(pending: dict | None) -> None:
    """Drop a pending call: a pending effect's scratch is removed, nothing applied."""
    if pending and pending.get("scratch"):
        remove_tree(Path(pending["scratch"]))


def effect_to_data(effect: Effect) -> dict:
    """Return an Effect as JSON-ready data."""
    return {
        "version": EFFECT_VERSION,
        "targets": list(effect.targets),
        "uppers": list(effect.uppers),
        "changes": [c.as_dict() for c in effect.changes],
        "ops": [list(op) for op in effect.ops],
        "stamps": [
            [layer, rel, list(s) if s is not None else None]
            for (layer, rel), s in effect.stamps.items()
        ],
        "skipped": list(effect.skipped),
        "refused": list(effect.refused),
        "bytes_written": effect.bytes_written,
    }


def effect_from_data(data: dict) -> Effect:
    """Return the Effect ``effect_to_data`` wrote; refuse an older format."""
    if data.get("version") != EFFECT_VERSION:
        raise ToolError(
            "this waiting command's effect was stored by an older version that "
            "named its files by path strings; it is not applied: run the "
            "command again"
        )
    return Effect(
        changes=[Change(**c) for c in data["changes"]],
        ops=[tuple(op) for op in data["ops"]],
        stamps={
            (layer, rel): tuple(s) if s is not None else None
            for layer, rel, s in data["stamps"]
        },
        skipped=list(data["skipped"]),
        refused=list(data["refused"]),
        bytes_written=data["bytes_written"],
        targets=list(data["targets"]),
        uppers=list(data["uppers"]),
    )
