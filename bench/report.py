"""Print bench figures next to their targets, with the machine's load.

Each bench prints its figures through ``figure``:

    figure  pipeline.throughput  7.6 runs/s  target ≥ 20  ratio 0.38 MISSED
        (load 1.90→2.40, 2 cores)

(on one line). ``ratio`` is value / target; a ``≤`` target is met at a ratio
of 1 or less, a ``≥`` target at 1 or more. The load is the 1-minute load
average when the figure's measurement started and ended, beside the machine's
core count, so a slow figure from a busy machine reads as such.

    python bench/report.py [--quick]

runs every bench of ``make bench`` (``--quick``: a pass of about two minutes)
and ends with the table of all their figures.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "figure  "


class Load:
    """The 1-minute load average at the start of a measurement, and at its end."""

    def __init__(self, start: float | None = None) -> None:
        """Start now, or at ``start``: a load average read when it began."""
        self.start = os.getloadavg()[0] if start is None else start
        self.cores = os.cpu_count() or 1

    def note(self) -> str:
        end = os.getloadavg()[0]
        return f"(load {self.start:.2f}→{end:.2f}, {self.cores} cores)"


def figure(
    name: str,
    value: float,
    target: float | None,
    op: str,
    unit: str,
    load: Load,
) -> None:
    """Print one figure as a ratio to its target (``op`` is ``≤`` or ``≥``).

    A target of 0 (nothing lost) is met by 0 and has no ratio; a figure with no
    target (None) is printed beside the others for the record.
    """
    if target is None:
        verdict = f"{'no target':<21}{'':<13}"
    else:
        if target:
            ratio = value / target
            met = ratio <= 1 if op == "≤" else ratio >= 1
        else:
            ratio, met = float("nan"), value == 0
        outcome = "met" if met else "MISSED"
        verdict = f"target {op} {target:<10g} ratio {ratio:5.2f} {outcome:<6}"
    print(
        f"{MARK}{name:<36} {value:>10.4g} {unit:<8} {verdict} {load.note()}",
        flush=True,
    )


@dataclass(frozen=True)
class Bench:
    script: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()


BENCHES = (
    Bench("ggs.py", quick=("--runs", "1000")),
    Bench("memory.py", quick=("--megrams", "100000", "--pairs", "1000")),
    Bench("pipeline.py", quick=("--runs", "10", "--seconds", "15")),
    Bench("hops.py", quick=("--runs", "3")),
    Bench("live.py", quick=("--quick",)),
    Bench("fairness.py", quick=("--long", "4", "--seconds", "8")),
    Bench("sandbox.py", quick=("--runs", "20")),
    Bench("curves.py", quick=("--quick",)),
    Bench("modelcost.py", args=("--figures",)),
)


def run_all(quick: bool) -> int:
    """Run every bench, echoing its output; print the figures' table at the end."""
    figures, failed = [], []
    started = time.monotonic()
    for bench in BENCHES:
        args = bench.args + (bench.quick if quick else ())
        print(f"== {bench.script} {' '.join(args)}".rstrip(), flush=True)
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / bench.script), *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith(MARK):
                figures.append(line.rstrip())
        if proc.wait():
            failed.append(bench.script)
    minutes = (time.monotonic() - started) / 60
    print(f"\n== figures ({'quick' if quick else 'full'} pass, {minutes:.1f} min)")
    print("\n".join(re.sub(f"^{MARK}", "", f) for f in figures))
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2-minute pass")
    return run_all(parser.parse_args().quick)


if __name__ == "__main__":
    sys.exit(main())
