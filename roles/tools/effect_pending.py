"""A Law 1 call waiting on the operator, as plain data any worker can settle.

When a subtask parks on an approval, what its call needs to be settled later is
stored with it: the tool, its arguments and the question put to the operator,
and for a sandboxed command its output, its Effect and the scratch whose upper
dirs hold the files it wrote::

    {"kind": "effect", "tool": "shell", "args": {"command": "rm a.txt"},
     "ask": {"tool": "shell", "command": "rm a.txt", "reason": "…", …},
     "output": "[exit code 0]\\n", "scratch": "/…/cmd-1a2b3c",
     "effect": {"changes": […], "ops": [["remove", "/…/a.txt"]], "stamps": …}}

``kind`` "call" is a call gated before it ran (no sandbox, or ``write_file``
onto an existing file): approved, it runs when settled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from roles.tools.effect import Change, Effect
from roles.tools.sandbox import SandboxRun, remove_tree


@dataclass(frozen=True)
class Stat:
    """What applying an effect reads of a file's stat: mode, owner and times."""

    st_mode: int
    st_uid: int
    st_gid: int
    st_atime_ns: int
    st_mtime_ns: int

    @classmethod
    def of(cls, st: Any) -> Stat:
        """Return the fields of an ``os.stat_result`` (or a Stat)."""
        return cls(st.st_mode, st.st_uid, st.st_gid, st.st_atime_ns, st.st_mtime_ns)


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
        "changes": [c.as_dict() for c in effect.changes],
        "ops": [_op_to_data(op) for op in effect.ops],
        "stamps": {p: list(s) if s else None for p, s in effect.stamps.items()},
        "skipped": list(effect.skipped),
        "bytes_written": effect.bytes_written,
    }


def effect_from_data(data: dict) -> Effect:
    """Return the Effect ``effect_to_data`` wrote."""
    return Effect(
        changes=[Change(**c) for c in data["changes"]],
        ops=[_op_from_data(op) for op in data["ops"]],
        stamps={p: tuple(s) if s else None for p, s in data["stamps"].items()},
        skipped=list(data["skipped"]),
        bytes_written=data["bytes_written"],
    )


def _op_to_data(op: tuple) -> list:
    kind = op[0]
    if kind in ("mkdir", "utime"):
        return [kind, str(op[1]), asdict(Stat.of(op[2]))]
    if kind == "chmod":
        return [kind, str(op[1]), op[2]]
    return [kind, *(str(part) for part in op[1:])]


def _op_from_data(data: list) -> tuple:
    kind = data[0]
    if kind in ("mkdir", "utime"):
        return (kind, Path(data[1]), Stat(**data[2]))
    if kind == "chmod":
        return (kind, Path(data[1]), data[2])
    if kind == "symlink":
        return (kind, data[1], Path(data[2]))
    return (kind, *(Path(part) for part in data[1:]))
