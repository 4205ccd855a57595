"""How far a real-model session's solved tasks are from the model's own speed.

The floor of a solved task is the time llama-server alone would need for its
tokens: its uncached prompt tokens (prompt less cached) at the server's
prompt-processing speed, plus its completion tokens at its generation speed.
Both speeds come from the session's ``llama-server.log``, which prints per
request

    I slot print_timing: id  0 | task 7 | prompt eval time =  1322.75 ms /  122 tokens
    I slot print_timing: id  0 | task 7 |        eval time = 20141.88 ms /  576 tokens

and are total tokens over total milliseconds of all its requests (requests of
0 tokens left out). Wall time over floor says how much of a task's time went
to anything but the model's own work: queues, tools, the pipeline, a busy CPU.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench import report

TIMING = re.compile(
    r"\|\s*(?P<kind>prompt eval|eval) time =\s*(?P<ms>\d+(?:\.\d+)?) ms /"
    r"\s*(?P<tokens>\d+) tokens"
)


@dataclass
class ServerSpeed:
    """The tokens and milliseconds llama-server reported over a session."""

    requests: int = 0
    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    gen_tokens: int = 0
    gen_ms: float = 0.0
    prompt_rates: list[float] = field(default_factory=list)
    gen_rates: list[float] = field(default_factory=list)

    def seconds(self, uncached: int, completion: int) -> float:
        """Return the floor of ``uncached`` prompt and ``completion`` tokens."""
        prompt_s = uncached * self.prompt_ms / self.prompt_tokens / 1000
        return prompt_s + completion * self.gen_ms / self.gen_tokens / 1000

    def line(self) -> str:
        prompt = 1000 * self.prompt_tokens / self.prompt_ms
        gen = 1000 * self.gen_tokens / self.gen_ms
        # The median request shows how far a busy spell pulls the totals down.
        medians = (
            statistics.median(self.prompt_rates),
            statistics.median(self.gen_rates),
        )
        return (
            f"llama-server speeds: prompt {prompt:.1f} tok/s, generation "
            f"{gen:.1f} tok/s over {self.requests} requests in llama-server.log "
            f"(median request: {medians[0]:.1f} and {medians[1]:.1f} tok/s)"
        )


def read_speeds(lines: Iterable[str]) -> ServerSpeed:
    """Return the totals of the timing lines among ``lines``; other lines,
    malformed ones included, are skipped."""
    speed = ServerSpeed()
    for line in lines:
        found = TIMING.search(line)
        if not found:
            continue
        tokens, ms = int(found["tokens"]), float(found["ms"])
        prompt = found["kind"] == "prompt eval"
        speed.requests += prompt
        if tokens == 0 or ms <= 0:
            continue
        if prompt:
            speed.prompt_tokens += tokens
            speed.prompt_ms += ms
            speed.prompt_rates.append(1000 * tokens / ms)
        else:
            speed.gen_tokens += tokens
            speed.gen_ms += ms
            speed.gen_rates.append(1000 * tokens / ms)
    return speed


@dataclass
class TaskFloor:
    """One solved task's tokens, wall time and floor."""

    task: str
    run: str
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    wall_s: float = 0.0
    floor_s: float = 0.0

    @property
    def uncached(self) -> int:
        return self.prompt - self.cached

    def row(self) -> str:
        ratio = f"{self.wall_s / self.floor_s:.1f}" if self.floor_s else "-"
        cells = (
            self.task,
            f"{self.uncached:,}",
            f"{self.completion:,}",
            f"{self.wall_s:.0f}",
            f"{self.floor_s:.0f}",
            ratio,
        )
        return "| " + " | ".join(cells) + " |"


def solved_tasks(results: Path) -> list[TaskFloor]:
    """Return the solved rows of ``model-results.md``, found by its headers
    (``task``, ``solved``, ``wall s``, ``run``), without tokens yet."""
    tasks, columns = [], {}
    for line in results.read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "task":
            columns = {name: i for i, name in enumerate(cells)}
            continue
        try:
            task, run = cells[columns["task"]], cells[columns["run"]]
            if cells[columns["solved"]] == "yes" and run != "-":
                tasks.append(
                    TaskFloor(task, run, wall_s=float(cells[columns["wall s"]]))
                )
        except (KeyError, IndexError, ValueError):
            continue
    return tasks


def task_floors(
    calls: Iterable[tuple], tasks: list[TaskFloor], speed: ServerSpeed
) -> list[TaskFloor]:
    """Add to each solved task its calls' tokens (``modelcost.Call`` tuples)
    and its floor at ``speed``."""
    by_run = {task.run.replace("-", ""): task for task in tasks}
    for _role, run_id, prompt, completion, cached, _first in calls:
        task = by_run.get(str(run_id).replace("-", ""))
        if task:
            task.prompt += prompt
            task.cached += min(cached, prompt)
            task.completion += completion
    for task in tasks:
        task.floor_s = speed.seconds(task.uncached, task.completion)
    return tasks


def totals(tasks: list[TaskFloor]) -> str:
    """Return the line of totals over the solved tasks ``tasks``."""
    n = len(tasks)
    tokens = sum(t.prompt + t.completion for t in tasks) / n
    uncached = sum(t.uncached for t in tasks) / n
    completion = sum(t.completion for t in tasks) / n
    wall, floor = sum(t.wall_s for t in tasks), sum(t.floor_s for t in tasks)
    ratio = f"{wall / floor:.1f}" if floor else "-"
    return (
        f"- {n} solved tasks: {tokens:,.0f} tok per solved task (uncached prompt "
        f"{uncached:,.0f} + completion {completion:,.0f}); median wall "
        f"{statistics.median(t.wall_s for t in tasks):.0f} s, median floor "
        f"{statistics.median(t.floor_s for t in tasks):.0f} s; wall / floor "
        f"{ratio} ({wall:.0f} s over {floor:.0f} s)"
    )


def floor_table(tasks: list[TaskFloor], speed: ServerSpeed) -> str:
    """Return the speeds, the per-task floor table and the line of totals."""
    head = (
        "| solved task | uncached prompt tok | completion tok | wall s | floor s "
        "| wall / floor |"
    )
    lines = [speed.line(), "", head, "|" + "---|" * 6]
    return "\n".join([*lines, *(t.row() for t in tasks), "", totals(tasks)])


def session_floor(session: Path, calls: list[tuple]) -> tuple[str, list[TaskFloor]]:
    """Return the floor report of ``session`` and its solved tasks (none when
    the floor is n/a)."""
    log, results = session / "llama-server.log", session / "model-results.md"
    if not log.is_file():
        return "floor: n/a (the session holds no llama-server.log)", []
    with log.open(errors="replace") as lines:
        speed = read_speeds(lines)
    if not speed.prompt_tokens or not speed.gen_tokens:
        reason = f"no timings in llama-server.log ({speed.requests} requests)"
        return f"floor: n/a ({reason})", []
    tasks = solved_tasks(results) if results.is_file() else []
    if not tasks:
        return f"{speed.line()}\nfloor: n/a (no solved tasks in model-results.md)", []
    tasks = task_floors(calls, tasks, speed)
    return floor_table(tasks, speed), tasks


def print_figures(tasks: list[TaskFloor]) -> None:
    """Print the floor's totals as ``make bench`` figures (no targets)."""
    if not tasks:
        return
    load = report.Load()
    n = len(tasks)
    tokens = sum(t.prompt + t.completion for t in tasks) / n
    report.figure("model tok per solved task", tokens, None, "≤", "tok", load)
    wall = statistics.median(t.wall_s for t in tasks)
    report.figure("model wall per solved task median", wall, None, "≤", "s", load)
    floor = sum(t.floor_s for t in tasks)
    if floor:
        ratio = sum(t.wall_s for t in tasks) / floor
        report.figure("model wall / floor (solved tasks)", ratio, None, "≤", "x", load)
