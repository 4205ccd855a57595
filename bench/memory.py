"""Measure the Megram store against the memory targets of DESIGN §10.

    python bench/memory.py [--megrams N] [--pairs P]

Fills a fresh LevelDB (in a temporary directory, removed afterwards) with N
Megrams spread evenly over P (space, entity) pairs, created over the last 30
days with the GGS quantization matrix, then prints:

- write throughput (Megrams/s, in atomic batches of 10,000);
- ``query_mk`` median and p99 for a pair of N/P Megrams;
- the wall time of one Dreamer pass (with a trivial distil function; its
  target, 20 s at 1,000,000 Megrams, is scaled to N).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report  # noqa: E402
from memory import MegramStore  # noqa: E402
from roles.contracts import Megram  # noqa: E402

MATRIX = [
    ("abandon", 0.95, -1.0, 0.05),
    ("accept", 0.90, 1.0, 0.05),
    ("change_approach", 0.85, -1.0, 0.05),
    ("success", 0.80, 1.0, 0.05),
    ("break_symmetry", 0.75, 1.0, 0.05),
    ("change_path", 0.30, 0.0, 0.2),
    ("refine", 0.10, 0.5, 0.5),
]
BATCH = 10_000
QUERIES = 2_000


def make_batch(rng, start, size, pairs, now):
    """Return Megrams ``start..start+size`` spread round-robin over the pairs."""
    out = []
    for i in range(start, start + size):
        state, f, sigma, k = rng.choice(MATRIX)
        pair = i % pairs
        out.append(
            Megram(
                level="M",
                created_at=now - timedelta(seconds=rng.uniform(0, 30 * 86400)),
                space=f"intent:task{pair}",
                entity="env:local",
                content=f"{state} on step {i}: tool output summary",
                state=state,
                f=f,
                sigma=sigma,
                k=k,
            )
        )
    return out


def fill(store, megrams, pairs, now, rng):
    """Write the Megrams in batches; return the seconds spent inside write_many."""
    spent = 0.0
    for start in range(0, megrams, BATCH):
        batch = make_batch(rng, start, min(BATCH, megrams - start), pairs, now)
        t0 = time.perf_counter()
        store.write_many(batch, now=now)
        spent += time.perf_counter() - t0
    return spent


def time_queries(store, pairs, now, rng):
    """Return the sorted query_mk latencies in milliseconds."""
    for pair in range(min(pairs, 50)):
        store.query_mk(f"intent:task{pair}", "env:local", now)
    samples = []
    for _ in range(QUERIES):
        space = f"intent:task{rng.randrange(pairs)}"
        t0 = time.perf_counter_ns()
        store.query_mk(space, "env:local", now)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return sorted(samples)


def distil(space, entity, signal, valence, contents):
    """Stand in for the LLM: return a one-line rule from the newest content."""
    return f"{signal} for {space}: {contents[0] if contents else 'no detail'}"


def main(argv=None):
    """Run the benchmark and print the four figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megrams", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=10_000)
    args = parser.parse_args(argv)
    if args.megrams < 1 or not 1 <= args.pairs <= args.megrams:
        parser.error("need megrams >= 1 and 1 <= pairs <= megrams")
    load = report.Load()
    rng = random.Random(7)
    now = datetime(2025, 6, 1, tzinfo=UTC)
    root = tempfile.mkdtemp(prefix="artoo-bench-memory-")
    try:
        with MegramStore(Path(root) / "memory.leveldb") as store:
            spent = fill(store, args.megrams, args.pairs, now, rng)
            samples = time_queries(store, args.pairs, now, rng)
            t0 = time.perf_counter()
            dreamt = store.dream(now=now, distil=distil)
            dream_s = time.perf_counter() - t0
            total = store.summary().total
    finally:
        shutil.rmtree(root, ignore_errors=True)
    per_pair = args.megrams // args.pairs
    p99 = samples[int(len(samples) * 0.99) - 1]
    print(f"store: {args.megrams:,} Megrams over {args.pairs:,} pairs")
    print(f"write throughput: {args.megrams / spent:,.0f} Megrams/s (batched)")
    print(
        f"query_mk ({per_pair} Megrams/pair): median "
        f"{statistics.median(samples):.3f} ms, p99 {p99:.3f} ms"
    )
    scale = args.megrams / 1_000_000
    at = f"{args.megrams:,}"
    rate = args.megrams / spent
    report.figure(f"memory.writes at {at}", rate, 50_000, "≥", "/s", load)
    report.figure(
        f"memory.query_mk median at {at}",
        statistics.median(samples),
        1.0,
        "≤",
        "ms",
        load,
    )
    report.figure(f"memory.dream at {at}", dream_s, 20 * scale, "≤", "s", load)
    print(
        f"dream pass: {dream_s:.2f} s (deleted {dreamt.deleted:,}, "
        f"demoted {dreamt.demoted:,}, promoted {dreamt.promoted:,}; "
        f"{total:,} Megrams left)"
    )


if __name__ == "__main__":
    main()
