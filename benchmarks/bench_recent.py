"""What the recent-change channel costs recall (`tether.repo.recent`, issue 17): the lines the last commits of
1, 3 and 8 touched files changed, read from git cold (a fresh process: nothing kept) and warm (a long-lived
process: kept while HEAD and the file stay), beside one `git diff -U0 HEAD -- FILE` process (the least any
question to git about a file costs), interleaved run by run on a generated history (`benchmarks/bigrepo.py`).

    python benchmarks/bench_recent.py [--commits 5000] [--files 3000] [--runs 9] [--cache DIR]

Ratios are medians of the per-run ratios to the git process timed just before.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import bigrepo

from tether.recall import scoring
from tether.repo import recent


def _cold(root: Path, paths: list[str]) -> float:
    recent._CACHE.clear()
    recent._BOUNDARY.clear()
    started = time.perf_counter()
    recent.recent_lines(root, paths, scoring.RECENT_COMMITS, scoring.RECENT_HORIZON)
    return time.perf_counter() - started


def _warm(root: Path, paths: list[str]) -> float:
    recent.recent_lines(root, paths, scoring.RECENT_COMMITS, scoring.RECENT_HORIZON)
    started = time.perf_counter()
    recent.recent_lines(root, paths, scoring.RECENT_COMMITS, scoring.RECENT_HORIZON)
    return time.perf_counter() - started


def _git(root: Path, path: str) -> float:
    started = time.perf_counter()
    subprocess.run(["git", "diff", "-U0", "HEAD", "--", path], cwd=root, capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=5_000)
    parser.add_argument("--files", type=int, default=3_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tether-bench-recent")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    repo = bigrepo.cached(args.cache, args.commits, args.files)
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    rng = random.Random(0)
    sets = {n: rng.sample(tracked, n) for n in (1, 3, 8)}
    print(
        f"repository: {repo} ({args.commits} commits, {len(tracked)} files); horizon {scoring.RECENT_HORIZON}"
    )
    rows: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for n, paths in sets.items():
            for kind, measure in (("cold", _cold), ("warm", _warm)):
                floor = _git(repo, paths[0])
                rows.setdefault(f"{n} file(s), {kind}", []).append((measure(repo, paths), floor))
    print("| touched files | recent lines, ms (median) | git diff process, ms | ratio (median of runs) |")
    print("|---|---:|---:|---:|")
    for name, pairs in rows.items():
        took = statistics.median(p[0] for p in pairs) * 1000
        floor = statistics.median(p[1] for p in pairs) * 1000
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"| {name} | {took:.2f} | {floor:.2f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
