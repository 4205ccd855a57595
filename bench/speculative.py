"""Speculative decoding on this machine: does a draft model make the local model faster?

llama-server takes a draft model (``-md``): the 0.5B of the same family proposes
up to ``DRAFT_MAX`` tokens and the 1.5B checks them in one batch. On a GPU that
pays almost always; on two CPU cores a batch of n tokens costs far more than one,
so it pays only when most drafted tokens are accepted. This measures it with the
product's own requests: for each tuning task's request, R1 perceives it, R2
plans it and R3 makes the first subtask's first tool choice, with the prompts
and JSON schemas the roles send, at temperature 0. The same requests go, in the
same order, to a fresh server alone and to a fresh server with the draft.

    python bench/speculative.py              # every tuning task
    python bench/speculative.py --tasks 4    # the first four

Generated tokens/s are llama-server's own timings (its log); the draft's
acceptance is read from the same log. Needs both weights: ``make model`` and
``python3 devtools/model.py --size 0.5b``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.modelfloor import ServerSpeed, read_speeds  # noqa: E402
from roles.contracts import SubTask  # noqa: E402
from roles.executor import FINAL_SCHEMA  # noqa: E402
from roles.executor_prompts import build_messages  # noqa: E402
from roles.llm.client import LLMClient, LLMError, client_for  # noqa: E402
from roles.perceiver import perceive  # noqa: E402
from roles.planner import plan  # noqa: E402
from roles.toolloop_turns import tool_choice_schema  # noqa: E402
from roles.tools import Toolbox  # noqa: E402

# llama.cpp prints, per request served with speculation:
#   draft acceptance = 0.57534 (   42 accepted /    73 generated), mean len =  1.90
ACCEPTANCE = re.compile(
    r"draft acceptance(?: rate)? = [\d.]+ \(\s*(?P<accepted>\d+) accepted /"
    r"\s*(?P<drafted>\d+) generated\)"
)
ALONE = "alone"
# The R3 turn: as many turns as the first attempt of a subtask has.
MAX_TURNS = 10


@dataclass
class Arm:
    """What one server did with the requests: replies, calls and its log."""

    name: str
    replies: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    wall_ms: dict[str, int] = field(default_factory=dict)
    speed: ServerSpeed = field(default_factory=ServerSpeed)
    accepted: int = 0
    drafted: int = 0

    def add(self, role: str, reply: str, elapsed_ms: int) -> None:
        """Count one call of ``role`` that answered ``reply``."""
        self.replies.append(reply)
        self.calls[role] = self.calls.get(role, 0) + 1
        self.wall_ms[role] = self.wall_ms.get(role, 0) + elapsed_ms

    def read_log(self, lines: Sequence[str]) -> None:
        """Take the server's speeds and the draft's acceptance from its log."""
        self.speed = read_speeds(lines)
        for found in map(ACCEPTANCE.search, lines):
            if found:
                self.accepted += int(found["accepted"])
                self.drafted += int(found["drafted"])


def ask_roles(request: str, clients: Callable[[str], LLMClient], arm: Arm) -> None:
    """Send R1's, R2's and R3's first requests for ``request``; record them."""
    today = date(2026, 1, 5)
    r1 = clients("R1")
    perception = perceive(request, model=r1, today=today)
    _record(arm, "R1", perception.usage)
    if perception.task_spec is None:
        return
    ids = iter(f"s{n}" for n in range(1, 100))
    planned = plan(
        perception.task_spec,
        model=clients("R2"),
        today=today,
        id_factory=lambda: next(ids),
    )
    _record(arm, "R2", planned.usage)
    if not planned.subtasks:
        return
    first_tool_choice(planned.subtasks[0], clients("R3"), arm)


def first_tool_choice(subtask: SubTask, r3: LLMClient, arm: Arm) -> None:
    """Ask R3 for the first subtask's first reply, as its tool loop would."""
    with tempfile.TemporaryDirectory() as workspace:
        box = Toolbox(Path(workspace))
        messages = build_messages(subtask, box, None, "", 1, MAX_TURNS)
        schema = tool_choice_schema(box.specs(), FINAL_SCHEMA)
        try:
            reply = r3.chat(messages, schema=schema, mode="tools:schema")
        except LLMError as error:
            arm.add("R3", f"error: {error}", 0)
            return
    arm.add("R3", reply.content or "", reply.usage.elapsed_ms)


def _record(arm: Arm, role: str, usage) -> None:
    if usage is None:
        arm.add(role, "(no call)", 0)
        return
    for call in usage.calls:
        arm.add(role, call.response, call.elapsed_ms)


def requests_of(count: int, root: Path) -> list[str]:
    """Return the first ``count`` tuning tasks' requests, their directories
    under ``root`` (never created: no tool runs)."""
    from devtools.tasks import TASKS

    chosen = TASKS[:count] if count else TASKS
    return [task.prompt.format(dir=root / task.name) for task in chosen]


def run_arm(setting: str, requests: Iterable[str], scratch: Path) -> Arm:
    """Start a fresh server with ``setting`` (an ``ARTOO_LOCAL_DRAFT`` value,
    ``alone`` for none) and send it every request."""
    from devtools.localmodel import LocalModel

    arm = Arm(setting)
    slug = re.sub(r"[^a-z0-9.-]+", "-", setting)
    local = LocalModel(scratch / slug, draft="" if setting == ALONE else setting)
    env = local.start()
    try:

        def clients(role: str) -> LLMClient:
            return client_for(role, env)

        for request in requests:
            ask_roles(request, clients, arm)
    finally:
        local.stop()
    arm.read_log(local.log.read_text(errors="replace").splitlines())
    return arm


def report(arms: Sequence[Arm]) -> str:
    """Return the arms side by side, each against the first (the server alone)."""
    base = arms[0]
    lines = [
        "| server | calls | generated tokens | generation tok/s (median request) "
        "| prompt tok/s | wall of the calls (s) | replies as alone "
        "| drafted tokens accepted | generation speed vs alone |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(arm, base) for arm in arms]
    lines.append("")
    for arm in arms[1:]:
        lines.append(f"wall by role (s), {arm.name}: {_by_role(base, arm)}")
    return "\n".join(lines)


def _gen_rate(speed: ServerSpeed) -> float:
    return 1000 * speed.gen_tokens / speed.gen_ms if speed.gen_ms else 0.0


def _row(arm: Arm, base: Arm) -> str:
    speed = arm.speed
    calls = sum(arm.calls.values())
    same = sum(a == b for a, b in zip(arm.replies, base.replies, strict=False))
    alike = f"{same} of {max(len(arm.replies), len(base.replies))}"
    accepted = (
        f"{arm.accepted} of {arm.drafted} ({arm.accepted / arm.drafted:.0%})"
        if arm.drafted
        else "-"
    )
    if not speed.has_timings:
        return f"| {arm.name} | {calls} | - | no timings | - | - | {alike} | - | - |"
    gen_median = sorted(speed.gen_rates)[len(speed.gen_rates) // 2]
    prompt = 1000 * speed.prompt_tokens / speed.prompt_ms
    wall = sum(arm.wall_ms.values()) / 1000
    base_rate = _gen_rate(base.speed)
    ratio = f"{_gen_rate(speed) / base_rate:.2f}x" if base_rate else "-"
    return (
        f"| {arm.name} | {calls} | {speed.gen_tokens} "
        f"| {_gen_rate(speed):.1f} ({gen_median:.1f}) | {prompt:.1f} | {wall:.0f} "
        f"| {alike} | {accepted} | {ratio} |"
    )


def _by_role(base: Arm, arm: Arm) -> str:
    roles = sorted(set(base.wall_ms) | set(arm.wall_ms))
    return ", ".join(
        f"{role} {base.wall_ms.get(role, 0) / 1000:.0f} → "
        f"{arm.wall_ms.get(role, 0) / 1000:.0f}"
        for role in roles
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tasks", type=int, default=0, help="the first N tuning tasks (default: all)"
    )
    parser.add_argument(
        "--arms",
        default="0.5b,0.5b:8,ngram-mod",
        help="ARTOO_LOCAL_DRAFT values to set against the server alone "
        "(default: 0.5b,0.5b:8,ngram-mod)",
    )
    args = parser.parse_args(argv)
    if args.tasks < 0:
        parser.error("--tasks must be 0 (all) or more")
    from devtools.localmodel import LocalModelMissing, speculation

    settings = [ALONE] + [a.strip() for a in args.arms.split(",") if a.strip()]
    try:
        for setting in settings[1:]:
            speculation(setting)
    except ValueError as problem:
        parser.error(str(problem))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        requests = requests_of(args.tasks, root / "tasks")
        try:
            arms = [run_arm(setting, requests, root) for setting in settings]
        except LocalModelMissing as problem:
            print(f"speculative: {problem}", file=sys.stderr)
            return 2
    print(f"{len(requests)} requests of the tuning tasks, temperature 0\n")
    print(report(arms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
