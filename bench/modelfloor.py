"""How far a real-model session's solved tasks are from the model's own speed.

The floor of a solved task is the time llama-server alone spent on, or would
need for, its tokens. The session's ``llama-server.log`` prints per request

    I slot print_timing: id  0 | task 7 | prompt eval time =  1322.75 ms /  122 tokens
    I slot print_timing: id  0 | task 7 |        eval time = 20141.88 ms /  576 tokens

each line led by a clock since the server started (``28.21.558.582``: minutes,
seconds, milliseconds, microseconds), which goes back when it restarts. Each
solved task's floor comes from the first of:

- its requests: the sum of those timings over the requests of its model calls.
  A call is matched to the first request of the log, not yet matched, whose
  prompt eval tokens are its uncached prompt tokens (prompt less cached) and
  whose eval tokens are its completion tokens; every call must match.
- its window: its uncached prompt and completion tokens at the speeds of the
  requests the log placed between its run's start and end. The log's clock is
  set to the wall clock by the calls that matched in the same start of the
  server (a call's trace is written once its reply is in, so the call written
  least late sets it).
- the session: its tokens at the speeds of all the log's requests, which a busy
  spell in part of the session lowers for every task.

A speed is total tokens over total milliseconds (requests of 0 tokens left
out). Wall time over floor says how much of a task's time went to anything but
the model's own work: queues, tools, the pipeline, a busy CPU. Under 1 it is no
result: the floor is wrong (overlapping requests, a call for the run after its
end, calls matched to the wrong requests, a misplaced window), and is reported
as such.
"""

from __future__ import annotations

import re
import sqlite3
import statistics
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from bench import report

TIMING = re.compile(
    r"\|\s*(?P<kind>prompt eval|eval) time =\s*(?P<ms>\d+(?:\.\d+)?) ms /"
    r"\s*(?P<tokens>\d+) tokens"
)
CLOCK = re.compile(r"^(?P<m>\d+)\.(?P<s>\d{2})\.(?P<ms>\d{3})\.(?P<us>\d{3})\s")
CALLS_SQL = (
    "SELECT run_id, coalesce(json_extract(data, '$.prompt_tokens'), 0), "
    "coalesce(json_extract(data, '$.completion_tokens'), 0), "
    "coalesce(json_extract(data, '$.cached_tokens'), 0), created_at "
    "FROM artoo_web_traceevent WHERE kind = 'llm_call' ORDER BY rowid"
)
RUNS_SQL = "SELECT id, created_at, finished_at FROM artoo_web_run"
OWN, WINDOW, SESSION = "its requests", "its window", "session"
SOURCES = {
    OWN: "the sum of llama-server's timings of its own requests",
    WINDOW: "its tokens at the speeds of the requests logged while it ran",
    SESSION: "its tokens at the session's speeds, with neither its requests nor "
    "any in its window in the log",
}


@dataclass
class ServerSpeed:
    """The tokens and milliseconds llama-server reported over some requests."""

    requests: int = 0
    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    gen_tokens: int = 0
    gen_ms: float = 0.0
    prompt_rates: list[float] = field(default_factory=list)
    gen_rates: list[float] = field(default_factory=list)

    @property
    def has_timings(self) -> bool:
        return bool(self.prompt_tokens and self.gen_tokens)

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


@dataclass
class Request:
    """One request's timings in llama-server.log, and when the log places it."""

    prompt_tokens: int
    prompt_ms: float
    gen_tokens: int = 0
    gen_ms: float = 0.0
    start: int = 0
    clock_s: float | None = None
    at: datetime | None = None

    @property
    def seconds(self) -> float:
        return (self.prompt_ms + self.gen_ms) / 1000


def log_clock(line: str) -> float | None:
    """Return the seconds since the server started that ``line`` begins with."""
    found = CLOCK.match(line)
    if not found:
        return None
    minutes, seconds = int(found["m"]), int(found["s"])
    return 60 * minutes + seconds + int(found["ms"]) / 1e3 + int(found["us"]) / 1e6


def read_requests(lines: Iterable[str]) -> list[Request]:
    """Return the requests whose timings ``lines`` hold, in the log's order,
    each numbered by the start of the server that logged it; other lines,
    malformed ones included, are skipped."""
    requests: list[Request] = []
    start, last = 0, None
    for line in lines:
        clock = log_clock(line)
        if clock is not None:
            start += last is not None and clock < last
            last = clock
        found = TIMING.search(line)
        if not found:
            continue
        tokens, ms = int(found["tokens"]), float(found["ms"])
        if found["kind"] == "prompt eval":
            requests.append(Request(tokens, ms, start=start, clock_s=clock))
        elif requests:
            requests[-1].gen_tokens, requests[-1].gen_ms = tokens, ms
    return requests


def speed_of(requests: Iterable[Request]) -> ServerSpeed:
    """Return the totals of ``requests``, leaving out parts of 0 tokens."""
    speed = ServerSpeed()
    for request in requests:
        speed.requests += 1
        if request.prompt_tokens and request.prompt_ms > 0:
            speed.prompt_tokens += request.prompt_tokens
            speed.prompt_ms += request.prompt_ms
            speed.prompt_rates.append(1000 * request.prompt_tokens / request.prompt_ms)
        if request.gen_tokens and request.gen_ms > 0:
            speed.gen_tokens += request.gen_tokens
            speed.gen_ms += request.gen_ms
            speed.gen_rates.append(1000 * request.gen_tokens / request.gen_ms)
    return speed


def read_speeds(lines: Iterable[str]) -> ServerSpeed:
    """Return the totals of the timing lines among ``lines``."""
    return speed_of(read_requests(lines))


@dataclass
class ModelCall:
    """One model call of the trace, and the request of the log it matched."""

    run: str
    prompt: int
    completion: int
    cached: int
    at: datetime | None = None
    request: Request | None = None

    @property
    def uncached(self) -> int:
        return self.prompt - min(self.cached, self.prompt)


def read_calls(db: Path) -> list[ModelCall]:
    """Return the model calls the trace of the database ``db`` records, in the
    order they were written."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(CALLS_SQL).fetchall()
    finally:
        conn.close()
    return [
        ModelCall(str(run).replace("-", ""), prompt, completion, cached, parse(at))
        for run, prompt, completion, cached, at in rows
    ]


def read_windows(db: Path) -> dict[str, tuple[datetime, datetime]]:
    """Return each finished run's start and end, by run id without dashes."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(RUNS_SQL).fetchall()
    finally:
        conn.close()
    windows = {}
    for run, created, finished in rows:
        start, end = parse(created), parse(finished)
        if start and end:
            windows[str(run).replace("-", "")] = (start, end)
    return windows


def parse(stamp: str | None) -> datetime | None:
    """Return the time a database column holds, or None."""
    try:
        return datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None


def match_requests(calls: list[ModelCall], requests: list[Request]) -> None:
    """Give each call the first request of the log, not yet given, with its
    uncached prompt tokens and completion tokens."""
    waiting: dict[tuple[int, int], deque[Request]] = defaultdict(deque)
    for request in requests:
        waiting[(request.prompt_tokens, request.gen_tokens)].append(request)
    for call in calls:
        queue = waiting.get((call.uncached, call.completion))
        if queue:
            call.request = queue.popleft()


def place_requests(calls: list[ModelCall], requests: list[Request]) -> None:
    """Set the wall time of each request of a server start that a matched
    call dates: the start is the earliest of the matched calls' times less
    their requests' clocks."""
    starts: dict[int, datetime] = {}
    for call in calls:
        request = call.request
        if request and call.at and request.clock_s is not None:
            began = call.at - timedelta(seconds=request.clock_s)
            starts[request.start] = min(began, starts.get(request.start, began))
    for request in requests:
        if request.start in starts and request.clock_s is not None:
            request.at = starts[request.start] + timedelta(seconds=request.clock_s)


@dataclass
class TaskFloor:
    """One solved task's tokens, wall time and floor, and where the floor came
    from."""

    task: str
    run: str
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    wall_s: float = 0.0
    floor_s: float = 0.0
    source: str = SESSION

    @property
    def uncached(self) -> int:
        return self.prompt - self.cached

    @property
    def is_below_floor(self) -> bool:
        return bool(self.floor_s) and self.wall_s < self.floor_s

    def row(self) -> str:
        if self.is_below_floor:
            ratio = "floor > wall: a measurement problem"
        else:
            ratio = f"{self.wall_s / self.floor_s:.1f}" if self.floor_s else "-"
        cells = (
            self.task,
            f"{self.uncached:,}",
            f"{self.completion:,}",
            f"{self.wall_s:.0f}",
            f"{self.floor_s:.0f}",
            ratio,
            self.source,
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


def set_floor(
    task: TaskFloor,
    calls: list[ModelCall],
    window: list[Request],
    speed: ServerSpeed,
) -> None:
    """Set ``task``'s floor from its own calls' requests when all of them
    matched one, else from the requests of its ``window``, else at the
    session's ``speed`` (no floor without calls)."""
    if not calls:
        task.floor_s, task.source = 0.0, "no model calls"
        return
    if all(call.request for call in calls):
        task.floor_s = sum(call.request.seconds for call in calls if call.request)
        task.source = OWN
        return
    local = speed_of(window)
    task.source = WINDOW if local.has_timings else SESSION
    chosen = local if local.has_timings else speed
    task.floor_s = chosen.seconds(task.uncached, task.completion)


def task_floors(
    calls: list[ModelCall],
    tasks: list[TaskFloor],
    requests: list[Request],
    windows: dict[str, tuple[datetime, datetime]],
    speed: ServerSpeed,
) -> list[TaskFloor]:
    """Add to each solved task its calls' tokens and its floor."""
    match_requests(calls, requests)
    place_requests(calls, requests)
    by_run = {task.run.replace("-", ""): task for task in tasks}
    own: dict[str, list[ModelCall]] = defaultdict(list)
    for call in calls:
        task = by_run.get(call.run)
        if task:
            task.prompt += call.prompt
            task.cached += min(call.cached, call.prompt)
            task.completion += call.completion
            own[call.run].append(call)
    for run, task in by_run.items():
        start, end = windows.get(run, (None, None))
        window = [r for r in requests if r.at and start and start <= r.at <= end]
        set_floor(task, own[run], window, speed)
    return tasks


def totals(tasks: list[TaskFloor]) -> str:
    """Return the line of totals over the solved tasks ``tasks``."""
    n = len(tasks)
    tokens = sum(t.prompt + t.completion for t in tasks) / n
    uncached = sum(t.uncached for t in tasks) / n
    completion = sum(t.completion for t in tasks) / n
    wall, floor = sum(t.wall_s for t in tasks), sum(t.floor_s for t in tasks)
    if floor and wall < floor:
        ratio = "n/a: the floor exceeds the wall time, a measurement problem"
    else:
        ratio = f"{wall / floor:.1f}" if floor else "-"
    return (
        f"- {n} solved tasks: {tokens:,.0f} tok per solved task (uncached prompt "
        f"{uncached:,.0f} + completion {completion:,.0f}); median wall "
        f"{statistics.median(t.wall_s for t in tasks):.0f} s, median floor "
        f"{statistics.median(t.floor_s for t in tasks):.0f} s; wall / floor "
        f"{ratio} ({wall:.0f} s over {floor:.0f} s)"
    )


def sources(tasks: list[TaskFloor]) -> list[str]:
    """Return the lines that say where the floors came from, and which tasks'
    floors exceed their wall time."""
    lines, n = [], len(tasks)
    for source, meaning in SOURCES.items():
        count = sum(t.source == source for t in tasks)
        lines.append(f"- floor from {source} ({meaning}): {count} of {n} tasks")
    below = [t.task for t in tasks if t.is_below_floor]
    if below:
        lines.append(
            f"- floor above the wall time, a measurement problem and no result: "
            f"{', '.join(below)}"
        )
    return lines


def floor_table(tasks: list[TaskFloor], speed: ServerSpeed) -> str:
    """Return the speeds, the per-task floor table, the line of totals and
    where the floors came from."""
    head = (
        "| solved task | uncached prompt tok | completion tok | wall s | floor s "
        "| wall / floor | floor from |"
    )
    lines = [speed.line(), "", head, "|" + "---|" * 7]
    lines += [t.row() for t in tasks]
    return "\n".join([*lines, "", totals(tasks), *sources(tasks)])


def session_floor(session: Path) -> tuple[str, list[TaskFloor]]:
    """Return the floor report of ``session`` and its solved tasks (none when
    the floor is n/a)."""
    log, results = session / "llama-server.log", session / "model-results.md"
    if not log.is_file():
        return "floor: n/a (the session holds no llama-server.log)", []
    with log.open(errors="replace") as lines:
        requests = read_requests(lines)
    speed = speed_of(requests)
    if not speed.has_timings:
        reason = f"no timings in llama-server.log ({speed.requests} requests)"
        return f"floor: n/a ({reason})", []
    tasks = solved_tasks(results) if results.is_file() else []
    if not tasks:
        return f"{speed.line()}\nfloor: n/a (no solved tasks in model-results.md)", []
    db = session / "db.sqlite3"
    calls, windows = read_calls(db), read_windows(db)
    tasks = task_floors(calls, tasks, requests, windows, speed)
    return floor_table(tasks, speed), tasks


def print_figures(tasks: list[TaskFloor]) -> None:
    """Print the floor's totals as ``make bench`` figures (no targets); a wall
    time under the floor is reported as a measurement problem, not a figure."""
    if not tasks:
        return
    load = report.Load()
    n = len(tasks)
    tokens = sum(t.prompt + t.completion for t in tasks) / n
    report.figure("model tok per solved task", tokens, None, "≤", "tok", load)
    wall = statistics.median(t.wall_s for t in tasks)
    report.figure("model wall per solved task median", wall, None, "≤", "s", load)
    wall, floor = sum(t.wall_s for t in tasks), sum(t.floor_s for t in tasks)
    if floor and wall < floor:
        print(
            f"model wall / floor (solved tasks): no figure, the floor ({floor:.0f} s)"
            f" exceeds the wall time ({wall:.0f} s): a measurement problem"
        )
    elif floor:
        report.figure(
            "model wall / floor (solved tasks)", wall / floor, None, "≤", "x", load
        )
