"""Print what the sandbox adds to one shell command (target: ≤ 10 ms median added).

Run from the project root: ``python bench/sandbox.py [--runs N]``. It times
``echo hi`` run plainly (``bash -c``), through ``Sandbox.run`` alone (build the
sandbox, run, compute the effect, remove the scratch) and through the sandboxed
Toolbox (the same, and the effect judged and applied), then a command that writes
100 small files. The figure is the median added per ``echo hi`` (Toolbox minus
plain), printed with its ratio to plain ``bash -c`` and the load average.
"""

import argparse
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

TARGET_ADDED_MS = 10


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


def sandbox_echo(sandbox: Sandbox):
    """Run ``echo hi`` through Sandbox.run alone: no judging, nothing applied."""
    return sandbox.run(
        "echo hi",
        timeout_s=30,
        output_cap=10_000,
        cancelled=lambda: False,
        track=lambda proc, running: None,
        kill_grace_s=1,
    )


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
        alone = timed(lambda: sandbox_echo(sandbox).discard(), runs)
        boxed = timed(lambda: toolbox.call("shell", {"command": "echo hi"}), runs)
        hundred = "mkdir -p out && for i in $(seq 100); do echo $i > out/$i; done"
        files = timed(
            lambda: toolbox.call("shell", {"command": hundred}), max(runs // 5, 5)
        )
        print(f"sandbox overhead ({runs} runs) {measured.note()}")
        print(line("echo hi, plain bash -c", plain))
        print(line("echo hi, Sandbox.run alone", alone))
        print(line("echo hi, sandboxed (Toolbox.call)", boxed))
        base_ms = statistics.median(plain)
        added = statistics.median(boxed) - base_ms
        ratio = statistics.median(boxed) / base_ms
        print(f"{'added by the sandbox (median)':<34} {added:7.1f} ms", end="")
        print(f"  ({ratio:.1f}× plain bash -c; target ≤ {TARGET_ADDED_MS} ms added)")
        print(line("write 100 files, sandboxed", files))
        report.figure("sandbox.echo added", added, TARGET_ADDED_MS, "≤", "ms", measured)
    finally:
        remove_tree(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
