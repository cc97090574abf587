"""The pull rate's cost: `feedback_totals()` (kept totals) beside the telemetry read recall makes, and the sum.

    .venv/bin/python benchmarks/bench_feedback.py [--quick] [--sizes 1000,10000,100000] [--runs 300]

Recall reads the project's pull rate (acted per surfaced over every memory, `store.base.pull_rate`) when some
candidate could be penalized as ignored: in a one-shot hook process once per recall, in a long-lived one at
most every 30 s (`recall.cache.PULL_RATE_SECONDS`). SQLite keeps the totals in step with every write
(`schema.TELEMETRY_TOTALS`, migration 0011), so reading them is one lookup; summing the counters instead (what
an index without them falls back to) grows with the telemetry's rows, one per memory ever shown. Both are
measured at each size beside what every recall already reads, the telemetry of 300 candidates (about a
prompt's at 10,000 memories), interleaved call by call on one SQLite index so a load spike on this shared
machine lands on all three. Prints the medians and the ratios to the telemetry read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.store.base import Event
from tether.store.sqlite.store import SQLiteStore

CANDIDATES = 300


def measure(size: int, runs: int) -> tuple[float, float, float]:
    """Median seconds of `feedback_totals()`, of `telemetry(CANDIDATES ids)` and of the counters' sum, over
    `size` shown memories."""
    with tempfile.TemporaryDirectory(prefix="tether-bench-feedback-") as tmp:
        store = SQLiteStore(Path(tmp) / "index.db")
        now = datetime.now(UTC)
        ids = [f"{i:08x}" for i in range(size)]
        for start in range(0, size, 5000):
            batch = ids[start : start + 5000]
            store.record([Event(mid, "surfaced", now) for mid in batch])
            store.record([Event(mid, "acted", now) for mid in batch[::7]])
        wanted = ids[:: max(1, size // CANDIDATES)][:CANDIDATES]
        totals: list[float] = []
        reads: list[float] = []
        sums: list[float] = []
        for _ in range(runs):
            t0 = time.perf_counter()
            store.feedback_totals()
            t1 = time.perf_counter()
            store.telemetry(wanted)
            t2 = time.perf_counter()
            store.conn.execute("SELECT total(surfaced), total(acted) FROM telemetry").fetchone()
            t3 = time.perf_counter()
            totals.append(t1 - t0)
            reads.append(t2 - t1)
            sums.append(t3 - t2)
        store.close()
    return statistics.median(totals), statistics.median(reads), statistics.median(sums)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 rows, 100 runs")
    args = parser.parse_args()
    sizes = [1000, 10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 100 if args.quick else args.runs
    print(
        f"| shown memories | telemetry({CANDIDATES} ids) | feedback_totals() | ratio | the counters summed | ratio |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        total, read, summed = measure(size, runs)
        print(
            f"| {size:,} | {read * 1000:.3f} ms | {total * 1000:.3f} ms | {total / read:.2f}x | "
            f"{summed * 1000:.3f} ms | {summed / read:.2f}x |"
        )


if __name__ == "__main__":
    main()
