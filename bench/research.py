"""Measure the research index (roles.research) on a real directory tree.

    python bench/research.py [ROOT] [--query WORDS] [--searches N]

Indexes ROOT (default: this checkout) into a temporary data directory, removed
afterwards, and prints the files indexed and skipped, the index size, the CPU
and wall time of the first build, of an update with nothing changed and of an
update after one file changed, and the median and p99 of N searches.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roles.research import RepoIndex  # noqa: E402


def timed(fn):
    """Return fn()'s result with its CPU and wall seconds."""
    cpu, wall = time.process_time(), time.monotonic()
    result = fn()
    return result, time.process_time() - cpu, time.monotonic() - wall


def main() -> None:
    """Print the index figures for one tree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=Path(__file__).parents[1])
    parser.add_argument("--query", default="def run_tool_loop")
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="research-bench-"))
    try:
        index = RepoIndex(Path(args.root), data)
        stats, cpu, wall = timed(index.update)
        size = index.path.stat().st_size / 1e6
        print(f"root: {index.root}")
        print(f"indexed {stats.added} files, skipped {stats.skipped}, {size:.1f} MB")
        print(f"first build: {cpu:.2f} s CPU, {wall:.2f} s wall")
        _, cpu, wall = timed(index.update)
        largest = max(index.files(), key=lambda p: (index.root / p).stat().st_size)
        print(f"update, nothing changed: {cpu:.3f} s CPU, {wall:.3f} s wall")
        # The index forgets one file's mtime: the tree itself is never touched.
        with closing(index.connect()) as conn, conn:
            conn.execute("UPDATE files SET mtime_ns = 0 WHERE path = ?", (largest,))
        _, cpu, wall = timed(index.update)
        print(f"update, one file changed: {cpu:.3f} s CPU, {wall:.3f} s wall")
        times = [
            timed(lambda: index.search(args.query))[2] for _ in range(args.searches)
        ]
        times.sort()
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(
            f"search {args.query!r}: median {statistics.median(times) * 1000:.1f} ms, "
            f"p99 {p99 * 1000:.1f} ms"
        )
    finally:
        shutil.rmtree(data)


if __name__ == "__main__":
    main()
