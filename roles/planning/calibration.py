"""R2's memory calibration: MUST NOT / SHOULD PREFER / CAUTION, in code.

Runs before every plan and replan, without an LLM call (reference §3.3). Blocks
in the order they appear in the prompt::

    MUST NOT (GGS blocked_targets — …):      "Do not use this … again: <target>"
    MUST NOT (GGS blocked_tools — …):        "Do not use tool: <tool>"
    OPERATOR RULES (remembered …):           what an operator remembered
    MUST NOT (proven constraints …):         C-level SOPs with σ ≤ 0
    SHOULD PREFER (proven best practices …): C-level SOPs with σ > 0
    MUST NOT (memory Avoid — …):             "<tool>: <target> — <why>"
    CAUTION (memory Caution — …):            "<tool>: <target> — <why>"
    MUST NOT (recent experience …):          abandoned runs (or σ < 0)
    SHOULD PREFER (recent experience …):     accepted/successful runs (or σ > 0)
    CAUTION (recent experience …):           other recent entries with σ = 0

SOPs and recent entries of a related past task (another task_id whose intent
shares the words of this one) say so, and name each of that task's files by
its last part (``wc -l a.log``): the example shows how, and its directories
are another task's, which the planner copied into this one's steps. When
memory gives no entry, the potentials speak instead (Exploit, Avoid,
Caution). At most 10 memory entries are injected; the directive's blocks are
never cut, since the tool layer enforces them anyway. Memory's Avoid targets
are outside that cap, at most 5, and only those the task's intent names (one
of their files, or their text) are listed: the tool layer refuses every one
of them, listed or not, and another task's targets would only teach the
planner that task's steps.
Negative feedback is evidence against a rule, never a rule or an experience of
its own, so it is never injected. A worked example (a recent success) that a
later run followed and then abandoned has such feedback in its pair, newer
than itself: it is demoted, no longer offered, until a newer success of the
pair shows the approach working again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from roles.contracts import Megram, MemoryRecall, PlanDirective
from roles.memory_contracts import TargetSignal
from roles.toolclass import describe

MAX_MEMORY_ENTRIES = 10
MAX_AVOID_LINES = 5
SUCCESS_STATES = frozenset({"accept", "success"})
FAILURE_STATES = frozenset({"abandon"})
# Action-state Megrams describe a tool and target, not an approach to a task.
ACTION_STATES = frozenset(
    {"refine", "change_path", "change_approach", "break_symmetry"}
)
FEEDBACK_STATE = "negative_feedback"
# An absolute path (not a URL's): its directories are where a task's files lay.
_ABSOLUTE_PATH = re.compile(r"(?<![\w./~-])/(?:[^\s/'\"`;|&<>()]+/)+(?=[^\s/])")

BLOCKED_TARGETS = (
    "MUST NOT (GGS blocked_targets — specific inputs already tried and blocked "
    "by environment):"
)
BLOCKED_TOOLS = (
    "MUST NOT (GGS blocked_tools — tool names that are logically wrong for this task):"
)
OPERATOR_RULES = "OPERATOR RULES (remembered by the operator — obey these):"
SOP_MUST_NOT = "MUST NOT (proven constraints from accumulated experience):"
SOP_PREFER = "SHOULD PREFER (proven best practices from accumulated experience):"
TARGET_AVOID = (
    "MUST NOT (memory Avoid — tool targets that failed in earlier tasks; the tool "
    "layer refuses them):"
)
TARGET_CAUTION = (
    "CAUTION (memory Caution — tool targets with mixed results in earlier tasks; "
    "the operator is asked before each use):"
)
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

    ``injected_examples`` the ids of the worked examples (recent successes) in
    it, which an abandoned run feeds back to (``roles.ggs.megrams``);
    ``injected_sops`` lists the ids of the learned C-level rules in the prompt,
    so a failing round can be fed back to them; an operator's rules are the
    operator's to forget, not experience a round can contradict.
    """

    must_not: list[str]
    should_prefer: list[str]
    caution: list[str]
    text: str
    injected_sops: list[str] = field(default_factory=list)
    operator: list[str] = field(default_factory=list)
    injected_examples: list[str] = field(default_factory=list)


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
        tools = [f"Do not use tool: {describe(t)}" for t in directive.blocked_tools]
        out.add("must_not", BLOCKED_TARGETS, targets)
        out.add("must_not", BLOCKED_TOOLS, tools)
    injected: tuple[list[str], list[str]] = ([], [])
    if recall is not None and recall.available:
        injected = _memory_blocks(out, recall)
    return _assemble(out, *injected)


def _memory_blocks(out: _Blocks, recall: MemoryRecall) -> tuple[list[str], list[str]]:
    """Add memory's blocks to ``out``; return the ids of the SOPs and of the
    worked examples they hold."""
    budget = MAX_MEMORY_ENTRIES
    operator = [m for m in recall.operator if m.content.strip()][:budget]
    budget -= len(operator)
    sops = [m for m in recall.sops if _is_rule(m)][:budget]
    budget -= len(sops)
    # Only a pair the task's intent names is told: another task's targets are
    # refused (Avoid) or asked about (Caution) by the tool layer all the same.
    bearing = [t for t in recall.targets if t.bears]
    avoid = [t for t in bearing if t.action == "Avoid"][:MAX_AVOID_LINES]
    caution = [t for t in bearing if t.action == "Caution"][:budget]
    budget -= len(caution)
    demoted = demoted_examples(recall.recent)
    recent = [m for m in recall.recent if _is_experience(m) and m.id not in demoted][
        :budget
    ]
    line = _liner(recall)
    out.add("operator", OPERATOR_RULES, [line(m) for m in operator])
    out.add("must_not", SOP_MUST_NOT, [line(m) for m in sops if m.sigma <= 0])
    out.add("should_prefer", SOP_PREFER, [line(m) for m in sops if m.sigma > 0])
    out.add("must_not", TARGET_AVOID, [_target_line(t) for t in avoid])
    out.add("caution", TARGET_CAUTION, [_target_line(t) for t in caution])
    out.add("must_not", RECENT_MUST_NOT, [line(m) for m in recent if _valence(m) < 0])
    out.add(
        "should_prefer", RECENT_PREFER, [line(m) for m in recent if _valence(m) > 0]
    )
    out.add("caution", RECENT_CAUTION, [line(m) for m in recent if _valence(m) == 0])
    if not sops and not recent and recall.action in POTENTIAL_BLOCKS:
        header, text = POTENTIAL_BLOCKS[recall.action]
        kind = {"Exploit": "should_prefer", "Avoid": "must_not"}.get(
            recall.action, "caution"
        )
        out.add(kind, header, [text])
    examples = [m.id for m in recent if m.id and _valence(m) > 0]
    return [m.id for m in sops if m.id], examples


def demoted_examples(recent: list[Megram]) -> set[str]:
    """Return the ids of the successes followed by negative feedback in their
    own pair: a later run was given them and abandoned (``negative_feedback``
    writes the evidence in the example's pair). A success without a time, or
    feedback without one, counts as older than the feedback."""
    feedback: dict[tuple[str, str], list] = {}
    for m in recent:
        if m.state == FEEDBACK_STATE:
            feedback.setdefault((m.space, m.entity), []).append(m.created_at)
    demoted = set()
    for m in recent:
        times = feedback.get((m.space, m.entity))
        if not m.id or not times or _valence(m) <= 0 or m.state == FEEDBACK_STATE:
            continue
        if m.created_at is None or any(t is None or t >= m.created_at for t in times):
            demoted.add(m.id)
    return demoted


def _is_rule(megram: Megram) -> bool:
    return bool(megram.content.strip()) and megram.state != FEEDBACK_STATE


def _is_experience(megram: Megram) -> bool:
    return (
        bool(megram.content.strip())
        and megram.state not in ACTION_STATES
        and megram.state != FEEDBACK_STATE
    )


def _valence(megram: Megram) -> int:
    """Return +1 (worked), -1 (failed) or 0 (unclear) for a recent entry."""
    if megram.state in SUCCESS_STATES:
        return 1
    if megram.state in FAILURE_STATES:
        return -1
    return (megram.sigma > 0) - (megram.sigma < 0)


def _line(megram: Megram) -> str:
    return " ".join(megram.content.split())


def _liner(recall: MemoryRecall):
    """Return the line writer that names the related task an entry comes from."""
    intents = {r.space: r.intent for r in recall.related}

    def line(megram: Megram) -> str:
        intent = intents.get(megram.space)
        text = _line(megram)
        if not intent:
            return text
        return f"{_ABSOLUTE_PATH.sub('', text)} (from the related task: {intent})"

    return line


def _target_line(signal: TargetSignal) -> str:
    why = " ".join(signal.content.split())
    return f"{signal.tool}: {signal.target}" + (f" — {why}" if why else "")


def _assemble(out: _Blocks, injected: list[str], examples: list[str]) -> Calibration:
    entries: dict[str, list[str]] = {
        "operator": [],
        "must_not": [],
        "should_prefer": [],
        "caution": [],
    }
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
        operator=entries["operator"],
        injected_examples=examples,
    )
