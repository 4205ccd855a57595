"""Print what the sandbox adds to one shell command (target: ≤ 50 ms median).

Run from the project root: ``python bench/sandbox.py [--runs N]``. It times
``echo hi`` run plainly (``bash -c``) and through the sandboxed Toolbox (build
the sandbox, run, compute and apply the effect, remove the scratch), and the
effect of a command that writes 100 small files.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import report  # noqa: E402
from roles.tools import Toolbox  # noqa: E402
from roles.tools.sandbox import Sandbox, SandboxPolicy, remove_tree  # noqa: E402
from roles.tools.shell import run_shell  # noqa: E402

TARGET_MS = 50


def timed(fn, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def line(name: str, samples: list[float], target: float | None = None) -> str:
    samples = sorted(samples)
    median = statistics.median(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    ratio = f"  ({median / target:.2f}× target {target} ms)" if target else ""
    return f"{name:<34} median {median:7.1f} ms  p95 {p95:7.1f} ms{ratio}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    runs = parser.parse_args().runs
    base = Path(tempfile.mkdtemp(prefix="artoo-bench-", dir="/var/tmp"))
    try:
        measured = report.Load()
        workspace = base / "ws"
        workspace.mkdir()
        policy = SandboxPolicy(state_dir=base / "state")
        sandbox = Sandbox(policy, run_key="bench", workspace=workspace)
        toolbox = Toolbox(workspace, sandbox=sandbox)

        plain = timed(lambda: run_shell("echo hi", cwd=workspace), runs)
        boxed = timed(lambda: toolbox.call("shell", {"command": "echo hi"}), runs)
        hundred = "mkdir -p out && for i in $(seq 100); do echo $i > out/$i; done"
        files = timed(
            lambda: toolbox.call("shell", {"command": hundred}), max(runs // 5, 5)
        )
        load = os.getloadavg()[0]
        print(f"sandbox overhead ({runs} runs, load average {load:.2f}, 2 cores)")
        print(line("echo hi, plain bash -c", plain))
        print(line("echo hi, sandboxed (Toolbox.call)", boxed, TARGET_MS))
        overhead = statistics.median(boxed) - statistics.median(plain)
        print(f"{'added by the sandbox (median)':<34} {overhead:7.1f} ms")
        print(line("write 100 files, sandboxed", files))
        median = statistics.median(boxed)
        report.figure("sandbox.echo median", median, TARGET_MS, "≤", "ms", measured)
    finally:
        remove_tree(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
