"""Costs as the work grows: does a page or a check cost more for a longer history?

    python bench/curves.py [--quick] [--messages 100,1000,10000] [--runs N]
                           [--events N] [--svg bench/curves.svg]

Fills a private SQLite database (in a temporary directory, removed afterwards)
and prints, at each size:

- the run page's first paint (a logged-in GET, median of 5) for a run with N bus
  messages, and the websocket catch-up of that run from its start (every page of
  ``catchup.stored_page``);
- the run list page at N runs;
- ``audit --verify`` (``verify_chain``) over N audit events with a valid chain:
  its time, and the peak memory it allocates (tracemalloc, in a second walk);
- the audit page (``/audit/``, staff) right after 100 more events were added to
  those N: it verifies only the events after the end last verified.

Each time is printed twice: ``.cpu``, the CPU time of this process (Django and
SQLite both run in it), against the target, and ``.wall`` for the record. On a
busy machine a niced bench mostly waits for a core, and only the CPU time says
what the work costs.

The run's messages repeat one GGS round of ten (a memory recall, two subtasks,
three attempts, a correction, two outcomes and a plan directive), so a longer
run has more rounds, as a real one does. The sizes grow into one another: the
run list and the audit log are extended, not rebuilt, between two sizes.
Writes the curves, time against size on log axes, to one SVG (``--svg``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import escape
from math import log10
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402

MESSAGES = (100, 1_000, 10_000)
RUNS = (1_000, 10_000, 100_000)
EVENTS = (10_000, 100_000, 1_000_000)
QUICK = {"messages": (100, 1_000), "runs": (1_000, 10_000), "events": (10_000, 100_000)}
PAINT_TARGET_MS = 300
LIST_TARGET_MS = 300
AUDIT_PAGE_TARGET_MS = 300
NEW_EVENTS = 100
REPEATS = 5
BATCH = 5_000
SVG = ROOT / "bench" / "curves.svg"

CRITERION = {"criterion": "prints hi", "mode": "verifiable"}
LOSS = {"D": 0.5, "P": 0.5, "Omega": 0.2, "L": 0.6}


def round_messages(r: int) -> list[tuple[str, str, str, dict]]:
    """Return one GGS round's messages: (sender, recipient, type, payload)."""
    s1, s2 = f"r{r}-s1", f"r{r}-s2"
    failed = {"subtask_id": s1, "status": "failed", "output": "[exit code 2]\nnope"}
    passed = {"subtask_id": s1, "status": "success", "output": "[exit code 0]\nhi"}
    return [
        ("R5", "R2", "MemoryRecall", {"task_id": "bench", "space": "s", "entity": "e"}),
        *(
            (
                "R2",
                "R3",
                "SubTask",
                {
                    "subtask_id": sid,
                    "parent_task_id": "bench",
                    "intent": f"do {sid}",
                    "success_criteria": [CRITERION],
                    "sequence": seq,
                },
            )
            for sid, seq in ((s1, 1), (s2, 2))
        ),
        ("R3", "R4a", "ExecutionResult", failed),
        (
            "R4a",
            "R3",
            "CorrectionSignal",
            {
                "subtask_id": s1,
                "attempt_number": 1,
                "failure_class": "logical",
                "what_was_wrong": "wrong flag",
                "what_to_do": "use -n",
            },
        ),
        ("R3", "R4a", "ExecutionResult", passed),
        ("R3", "R4a", "ExecutionResult", {**passed, "subtask_id": s2}),
        *(
            (
                "R4a",
                "R4b",
                "SubTaskOutcome",
                {
                    "subtask_id": sid,
                    "parent_task_id": "bench",
                    "status": "success",
                    "criteria_verdicts": [
                        {"criterion": "prints hi", "verdict": "pass", "evidence": "hi"}
                    ],
                },
            )
            for sid in (s1, s2)
        ),
        (
            "R7",
            "R2",
            "PlanDirective",
            {
                "task_id": "bench",
                "loss": LOSS,
                "prev_directive": "init" if r == 0 else "refine",
                "directive": "refine",
                "grad_l": -0.01,
                "rationale": f"round {r}",
            },
        ),
    ]


def fill_run(user, count: int):
    """Create a run of ``user`` with ``count`` bus messages, a round at a time."""
    from artoo_web.models import BusMessage, Run

    run = Run.objects.create(owner=user, raw_input="bench", task_id="bench")
    rows, r = [], 0
    while len(rows) < count:
        rows.extend(
            BusMessage(run=run, round=r, sender=s, recipient=to, type=t, payload=p)
            for s, to, t, p in round_messages(r)
        )
        r += 1
    BusMessage.objects.bulk_create(rows[:count], batch_size=BATCH)
    Run.objects.filter(id=run.id).update(round=r - 1)
    return Run.objects.get(id=run.id)


@dataclass(frozen=True)
class Cost:
    """Milliseconds of CPU (this process: Django and SQLite) and of wall clock."""

    cpu_ms: float
    wall_ms: float


class Timer:
    def __enter__(self) -> Timer:
        self.cpu, self.wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.cost = Cost(
            (time.process_time() - self.cpu) * 1000,
            (time.perf_counter() - self.wall) * 1000,
        )


def median_get(client, url: str, repeats: int = REPEATS) -> Cost:
    """Return the median cost of GETs of ``url`` (status 200 checked)."""
    costs = []
    for _ in range(repeats):
        with Timer() as timer:
            response = client.get(url)
        costs.append(timer.cost)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}")
    return Cost(
        statistics.median(c.cpu_ms for c in costs),
        statistics.median(c.wall_ms for c in costs),
    )


def first_paint(client, run) -> Cost:
    from django.urls import reverse

    return median_get(client, reverse("run-detail", args=[run.id]))


def catch_up(run) -> tuple[Cost, int]:
    """Return the time to read every stored page of the run, and the frames read."""
    from artoo_web import catchup

    last, frames = 0, 0
    with Timer() as timer:
        while True:
            page = catchup.stored_page(run.id, last)
            frames += len(page.frames)
            if page.frames:
                last = page.frames[-1][0]
            if len(page.frames) < catchup.CATCH_UP_PAGE:
                break
    return timer.cost, frames


def fill_runs(user, start: int, end: int) -> None:
    """Add finished runs ``start..end`` of ``user``, ``BATCH`` per insert."""
    from artoo_web.models import Run, RunStatus

    for low in range(start, end, BATCH):
        Run.objects.bulk_create(
            Run(
                owner=user,
                raw_input=f"task {i}",
                task_id=f"task-{i}",
                status=RunStatus.DONE,
            )
            for i in range(low, min(end, low + BATCH))
        )


def run_list(client) -> Cost:
    from django.urls import reverse

    return median_get(client, reverse("run-list"))


def fill_audit(start: int, end: int, prev_hash: str) -> str:
    """Chain audit events ``start..end`` after ``prev_hash``; return the last hash."""
    from artoo_web.auditlog import AuditEventRecord, chain_hash

    base = datetime(2026, 1, 1, tzinfo=UTC)
    for low in range(start, end, BATCH):
        rows = []
        for i in range(low, min(end, low + BATCH)):
            when = base + timedelta(seconds=i)
            row = AuditEventRecord(
                event_id=f"e{i}",
                source="message",
                message_id=i,
                run_id="bench",
                timestamp=when,
                from_role="R3",
                to_role="R4a",
                message_type="ExecutionResult",
                recorded_at=when,
                prev_hash=prev_hash,
            )
            row.hash = prev_hash = chain_hash(prev_hash, row.content())
            rows.append(row)
        AuditEventRecord.objects.bulk_create(rows)
    return prev_hash


def verify_cost() -> tuple[Cost, float, int]:
    """Return verify_chain's cost, its peak traced memory in MB, and its count.

    The time comes from an untraced walk: tracing slows every allocation.
    """
    from artoo_web.auditlog import verify_chain

    with Timer() as timer:
        count, broken = verify_chain()
    if broken:
        raise RuntimeError(broken)
    tracemalloc.start()
    try:
        verify_chain()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return timer.cost, peak / 1e6, count


@dataclass
class Curve:
    label: str
    unit: str
    colour: str
    points: list[tuple[int, float]] = field(default_factory=list)


def show(name: str, cost: Cost, target: float | None, load: report.Load) -> None:
    """Print a cost: its CPU time against the target, its wall time for the record."""
    report.figure(f"{name}.cpu", cost.cpu_ms, target, "≤", "ms", load)
    report.figure(f"{name}.wall", cost.wall_ms, None, "≤", "ms", load)


def measure_messages(client, user, sizes, curves: dict[str, Curve]) -> None:
    for size in sizes:
        run = fill_run(user, size)
        load = report.Load()
        paint = first_paint(client, run)
        show(f"curves.run_page@{size}msg", paint, PAINT_TARGET_MS, load)
        load = report.Load()
        caught, frames = catch_up(run)
        if frames != size:
            raise RuntimeError(f"catch-up read {frames} frames of {size}")
        show(f"curves.catch_up@{size}msg", caught, None, load)
        curves["paint"].points.append((size, paint.cpu_ms))
        curves["catch_up"].points.append((size, caught.cpu_ms))


def measure_runs(client, user, sizes, curves: dict[str, Curve]) -> None:
    have = user.runs.count()
    for size in sizes:
        fill_runs(user, have, size)
        have = max(have, size)
        load = report.Load()
        listed = run_list(client)
        show(f"curves.run_list@{size}runs", listed, LIST_TARGET_MS, load)
        curves["run_list"].points.append((size, listed.cpu_ms))


def audit_page(client) -> Cost:
    """Return the cost of one visit of the audit page (status 200 checked)."""
    from django.urls import reverse

    with Timer() as timer:
        response = client.get(reverse("audit"))
    if response.status_code != 200 or b"Chain verified" not in response.content:
        raise RuntimeError(f"the audit page answered {response.status_code}")
    return timer.cost


def measure_audit(staff, sizes, curves: dict[str, Curve]) -> None:
    from artoo_web.auditlog import GENESIS

    have, last = 0, GENESIS
    for size in sizes:
        if size < have:
            raise ValueError(f"audit sizes must grow by {NEW_EVENTS}: {size} < {have}")
        last = fill_audit(have, size, last)
        have = size
        load = report.Load()
        cost, peak_mb, count = verify_cost()
        if count != size:
            raise RuntimeError(f"verify_chain walked {count} events of {size}")
        show(f"curves.audit_verify@{size}", cost, None, load)
        report.figure(
            f"curves.audit_verify@{size}.peak", peak_mb, None, "≤", "MB", load
        )
        curves["verify"].points.append((size, cost.cpu_ms))
        curves["verify_mb"].points.append((size, peak_mb))
        last = fill_audit(size, size + NEW_EVENTS, last)
        have = size + NEW_EVENTS
        load = report.Load()
        page = audit_page(staff)
        show(f"curves.audit_page@{size}+{NEW_EVENTS}", page, AUDIT_PAGE_TARGET_MS, load)
        curves["audit_page"].points.append((size, page.cpu_ms))


def new_curves() -> dict[str, Curve]:
    return {
        "paint": Curve("run page first paint (messages)", "ms", "#1f77b4"),
        "catch_up": Curve("catch-up from the start (messages)", "ms", "#ff7f0e"),
        "run_list": Curve("run list page (runs)", "ms", "#2ca02c"),
        "verify": Curve("audit --verify (events)", "ms", "#d62728"),
        "audit_page": Curve("audit page, 100 new (events)", "ms", "#8c564b"),
        "verify_mb": Curve("audit --verify peak memory (events)", "MB", "#9467bd"),
    }


# -- the SVG ------------------------------------------------------------------

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 460, 300, 56, 16, 28, 96


def _log_scale(values: list[float], low: float, high: float):
    lo = log10(min(values)) if values else 0.0
    hi = log10(max(values)) if values else 1.0
    lo, hi = (lo - 0.5, hi + 0.5) if hi - lo < 1e-9 else (lo, hi)
    return lambda v: low + (high - low) * (log10(v) - lo) / (hi - lo)


def _decades(values: list[float]) -> list[float]:
    lo, hi = int(log10(min(values)) // 1), int(-(-log10(max(values)) // 1))
    return [10.0**e for e in range(lo, hi + 1)]


def panel(title: str, unit: str, curves: list[Curve], dx: int) -> str:
    """Return one log-log panel of ``curves`` as SVG, ``dx`` from the left."""
    curves = [c for c in curves if c.points]
    points = [(x, y) for c in curves for x, y in c.points if x > 0 and y > 0]
    if not points:
        return ""
    xs, ys = _decades([x for x, _ in points]), _decades([y for _, y in points])
    fx = _log_scale(xs, dx + PAD_L, dx + W - PAD_R)
    fy = _log_scale(ys, H - PAD_B, PAD_T)
    out = [
        f'<text x="{dx + PAD_L}" y="16" font-weight="bold">{escape(title)}</text>',
        f'<text x="{dx + 12}" y="{(H - PAD_B + PAD_T) / 2}" transform="rotate(-90 '
        f'{dx + 12} {(H - PAD_B + PAD_T) / 2})" text-anchor="middle">{unit}</text>',
    ]
    for x in xs:
        out.append(
            f'<line x1="{fx(x):.1f}" y1="{PAD_T}" x2="{fx(x):.1f}" y2="{H - PAD_B}" '
            f'stroke="#ddd"/><text x="{fx(x):.1f}" y="{H - PAD_B + 14}" '
            f'text-anchor="middle">{x:,.0f}</text>'
        )
    for y in ys:
        out.append(
            f'<line x1="{dx + PAD_L}" y1="{fy(y):.1f}" x2="{dx + W - PAD_R}" '
            f'y2="{fy(y):.1f}" stroke="#ddd"/><text x="{dx + PAD_L - 4}" '
            f'y="{fy(y) + 4:.1f}" text-anchor="end">{y:,g}</text>'
        )
    for i, c in enumerate(curves):
        line = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in c.points if y > 0)
        dots = "".join(
            f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3"><title>'
            f"{escape(c.label)}: {y:.4g} {c.unit} at {x:,}</title></circle>"
            for x, y in c.points
            if y > 0
        )
        ly = H - PAD_B + 34 + 16 * i
        out.append(
            f'<g stroke="{c.colour}" fill="{c.colour}"><polyline fill="none" '
            f'stroke-width="2" points="{line}"/>{dots}<line x1="{dx + PAD_L}" '
            f'y1="{ly - 4}" x2="{dx + PAD_L + 18}" y2="{ly - 4}" stroke-width="2"/>'
            f'<text x="{dx + PAD_L + 24}" y="{ly}" stroke="none">'
            f"{escape(c.label)}</text></g>"
        )
    return "".join(out)


def curves_svg(curves: dict[str, Curve], note: str) -> str:
    """Return the SVG: time against size, and verify's peak memory against size."""
    times = [c for key, c in curves.items() if c.unit == "ms"]
    memory = [c for key, c in curves.items() if c.unit == "MB"]
    body = panel("CPU time against size (log-log)", "ms", times, 0) + panel(
        "Peak memory against size (log-log)", "MB", memory, W
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H + 16}" '
        f'viewBox="0 0 {2 * W} {H + 16}" font-family="sans-serif" font-size="11">'
        f'<rect width="100%" height="100%" fill="white"/>{body}'
        f'<text x="{PAD_L}" y="{H + 10}" fill="#666">{escape(note)}</text></svg>\n'
    )


# -- setup and main -----------------------------------------------------------


def setup_django(data_dir: Path) -> None:
    """Point Django at a fresh SQLite database in ``data_dir`` and migrate it."""
    os.environ.update(
        ARTOO_DATA_DIR=str(data_dir),
        DATABASE_URL="",
        SECRET_KEY="bench-curves-only",
        DJANGO_SETTINGS_MODULE="artoo_web.settings",
    )
    import django
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    django.setup()
    setup_test_environment()
    call_command("migrate", verbosity=0)


def sizes(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(",") if s.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--messages", type=sizes, help="bus messages per run")
    parser.add_argument("--runs", type=sizes, help="runs in the run list")
    parser.add_argument("--events", type=sizes, help="audit events verified")
    parser.add_argument("--svg", type=Path, default=SVG, help="where the SVG goes")
    args = parser.parse_args()
    chosen = {
        key: getattr(args, key) or (QUICK[key] if args.quick else full)
        for key, full in (("messages", MESSAGES), ("runs", RUNS), ("events", EVENTS))
    }
    data_dir = Path(tempfile.mkdtemp(prefix="artoo-curves-"))
    started = time.monotonic()
    curves = new_curves()

    def draw() -> None:
        # After each part, so a long pass cut short still leaves its curves.
        note = (
            f"bench/curves.py{' --quick' if args.quick else ''}, "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f} "
            f"on {os.cpu_count()} cores, {time.monotonic() - started:.0f} s"
        )
        args.svg.write_text(curves_svg(curves, note))

    try:
        setup_django(data_dir)
        from django.contrib.auth import get_user_model
        from django.test import Client

        user = get_user_model().objects.create_user("bench", password="bench-pass")
        client = Client()
        client.force_login(user)
        measure_messages(client, user, chosen["messages"], curves)
        draw()
        measure_runs(client, user, chosen["runs"], curves)
        draw()
        staff = Client()
        staff.force_login(
            get_user_model().objects.create_user(
                "bench-staff", password="bench-pass", is_staff=True
            )
        )
        measure_audit(staff, chosen["events"], curves)
        draw()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"wrote {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
