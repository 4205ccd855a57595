"""R2's memory calibration: MUST NOT / SHOULD PREFER / CAUTION, in code.

Runs before every plan and replan, without an LLM call (reference §3.3). Blocks
in the order they appear in the prompt::

    MUST NOT (GGS blocked_targets — …):      "Do not use this … again: <target>"
    MUST NOT (GGS blocked_tools — …):        "Do not use tool: <tool>"
    MUST NOT (proven constraints …):         C-level SOPs with σ ≤ 0
    SHOULD PREFER (proven best practices …): C-level SOPs with σ > 0
    MUST NOT (recent experience …):          abandoned runs (or σ < 0)
    SHOULD PREFER (recent experience …):     accepted/successful runs (or σ > 0)
    CAUTION (recent experience …):           other recent entries with σ = 0

When memory gives no entry, the potentials speak instead (Exploit, Avoid,
Caution). At most 10 memory entries are injected; the directive's blocks are
never cut, since the tool layer enforces them anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roles.contracts import Megram, MemoryRecall, PlanDirective

MAX_MEMORY_ENTRIES = 10
SUCCESS_STATES = frozenset({"accept", "success"})
FAILURE_STATES = frozenset({"abandon"})
# Action-state Megrams describe a tool and target, not an approach to a task.
ACTION_STATES = frozenset(
    {"refine", "change_path", "change_approach", "break_symmetry"}
)

BLOCKED_TARGETS = (
    "MUST NOT (GGS blocked_targets — specific inputs already tried and blocked "
    "by environment):"
)
BLOCKED_TOOLS = (
    "MUST NOT (GGS blocked_tools — tool names that are logically wrong for this task):"
)
SOP_MUST_NOT = "MUST NOT (proven constraints from accumulated experience):"
SOP_PREFER = "SHOULD PREFER (proven best practices from accumulated experience):"
RECENT_MUST_NOT = "MUST NOT (recent experience — these approaches failed):"
RECENT_PREFER = "SHOULD PREFER (recent experience — these approaches succeeded):"
RECENT_CAUTION = "CAUTION (recent experience — outcome unclear, check carefully):"
POTENTIAL_BLOCKS = {
    "Exploit": (
        "SHOULD PREFER (memory signal: this task class succeeded previously):",
        "Follow the same general approach that succeeded previously.",
    ),
    "Avoid": (
        "MUST NOT (memory signal: this task class consistently failed):",
        "Do not repeat the approach that failed previously.",
    ),
    "Caution": (
        "CAUTION (memory signal: mixed results for this task class):",
        "Validate each step carefully before committing.",
    ),
}


@dataclass
class Calibration:
    """The MUST NOT / SHOULD PREFER / CAUTION entries and their prompt text.

    ``injected_sops`` lists the ids of the C-level rules in the prompt, so a
    failing round can be fed back to them.
    """

    must_not: list[str]
    should_prefer: list[str]
    caution: list[str]
    text: str
    injected_sops: list[str] = field(default_factory=list)


@dataclass
class _Blocks:
    blocks: list[tuple[str, str, list[str]]] = field(default_factory=list)

    def add(self, kind: str, header: str, lines: list[str]) -> None:
        if lines:
            self.blocks.append((kind, header, lines))


def calibrate(
    recall: MemoryRecall | None, directive: PlanDirective | None = None
) -> Calibration:
    """Return the calibration blocks for a plan (``directive`` on a replan)."""
    out = _Blocks()
    if directive is not None:
        targets = [
            f"Do not use this specific query/command/path again: {t}"
            for t in directive.blocked_targets
        ]
        tools = [f"Do not use tool: {t}" for t in directive.blocked_tools]
        out.add("must_not", BLOCKED_TARGETS, targets)
        out.add("must_not", BLOCKED_TOOLS, tools)
    injected: list[str] = []
    if recall is not None and recall.available:
        injected = _memory_blocks(out, recall)
    return _assemble(out, injected)


def _memory_blocks(out: _Blocks, recall: MemoryRecall) -> list[str]:
    budget = MAX_MEMORY_ENTRIES
    sops = [m for m in recall.sops if m.content.strip()][:budget]
    budget -= len(sops)
    recent = [m for m in recall.recent if _is_experience(m)][:budget]
    out.add("must_not", SOP_MUST_NOT, [_line(m) for m in sops if m.sigma <= 0])
    out.add("should_prefer", SOP_PREFER, [_line(m) for m in sops if m.sigma > 0])
    out.add("must_not", RECENT_MUST_NOT, [_line(m) for m in recent if _valence(m) < 0])
    out.add(
        "should_prefer", RECENT_PREFER, [_line(m) for m in recent if _valence(m) > 0]
    )
    out.add("caution", RECENT_CAUTION, [_line(m) for m in recent if _valence(m) == 0])
    if not sops and not recent and recall.action in POTENTIAL_BLOCKS:
        header, line = POTENTIAL_BLOCKS[recall.action]
        kind = {"Exploit": "should_prefer", "Avoid": "must_not"}.get(
            recall.action, "caution"
        )
        out.add(kind, header, [line])
    return [m.id for m in sops if m.id]


def _is_experience(megram: Megram) -> bool:
    return bool(megram.content.strip()) and megram.state not in ACTION_STATES


def _valence(megram: Megram) -> int:
    """Return +1 (worked), -1 (failed) or 0 (unclear) for a recent entry."""
    if megram.state in SUCCESS_STATES:
        return 1
    if megram.state in FAILURE_STATES:
        return -1
    return (megram.sigma > 0) - (megram.sigma < 0)


def _line(megram: Megram) -> str:
    return " ".join(megram.content.split())


def _assemble(out: _Blocks, injected: list[str]) -> Calibration:
    entries: dict[str, list[str]] = {"must_not": [], "should_prefer": [], "caution": []}
    texts = []
    for kind, header, lines in out.blocks:
        entries[kind].extend(lines)
        texts.append(header + "\n" + "".join(f"  - {line}\n" for line in lines))
    return Calibration(
        must_not=entries["must_not"],
        should_prefer=entries["should_prefer"],
        caution=entries["caution"],
        text="\n".join(texts),
        injected_sops=injected,
    )
