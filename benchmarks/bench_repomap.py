"""Benchmark the repo map against plain `git log` on a generated history (`benchmarks/bigrepo.py`).

    .venv/bin/python benchmarks/bench_repomap.py [--commits 20000] [--files 3000] [--runs 7] [--cache DIR]

The repository (20k commits, ~3,000 files of a few KB with import lines, renames, deletes, sweeps) is
generated once with `git fast-import` and cached under the temp dir (`--cache`). Each run interleaves, so a
loaded machine slows baseline and subject alike; ratios are medians of the per-run ratios:

1. first build: `git log --name-only` over the whole history (the baseline) against a full repo map build
   (files, renames, co-change, fan-in) into a fresh SQLite file; and what its saves cost (the same build
   written once at its end, the baseline of that row);
2. refresh after a pull of 500 commits: `git log --name-status old..new` against the map's incremental
   refresh from the last commit it read;
3. refresh with nothing new, against `git status` (what any tool pays to look at a work tree);
4. the hot path a hook uses: open + exists + neighbours + fan_in on a fresh connection.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bigrepo

from tether.repo.map import RepoMap
from tether.store.sqlite.repomap import RepoMapTables, migrate_repomap

PULL = 500


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fresh_map(repo: Path, db: Path) -> tuple[RepoMap, sqlite3.Connection]:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate_repomap(conn)
    return RepoMap(repo, RepoMapTables(conn)), conn


def git_out(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=bigrepo.GIT_ENV, capture_output=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=3_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tether-bench")
    args = parser.parse_args()

    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    repo = bigrepo.cached(args.cache, args.commits, args.files)
    top = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    print(f"repository: {repo} ({args.commits} commits, ready in {time.perf_counter() - started:.1f}s)")
    db = args.cache / "bench-repomap.db"
    rows: dict[str, list[tuple[float, float]]] = {"build": [], "saves": [], "pull": [], "noop": []}
    hot: list[float] = []
    report = None
    for _ in range(args.runs):
        git_out(repo, "reset", "-q", "--hard", top)
        base = timed(lambda: git_out(repo, "log", "--name-only", "--format=%H"))
        rm, conn = fresh_map(repo, db)
        build = timed(rm.refresh)
        rows["build"].append((base, build))
        once, conn = fresh_map(repo, db)
        start = time.perf_counter()
        once.refresh(checkpoint=10**9)
        rows["saves"].append((time.perf_counter() - start, build))

        git_out(repo, "reset", "-q", "--hard", f"{top}~{PULL}")
        rm, conn = fresh_map(repo, db)
        rm.refresh()
        git_out(repo, "reset", "-q", "--hard", top)
        start = time.perf_counter()
        git_out(repo, "log", "--name-status", f"{top}~{PULL}..{top}")
        base = time.perf_counter() - start
        start = time.perf_counter()
        report = rm.refresh()
        rows["pull"].append((base, time.perf_counter() - start))

        base = timed(lambda: git_out(repo, "status", "--porcelain"))
        start = time.perf_counter()
        rm.refresh()
        rows["noop"].append((base, time.perf_counter() - start))
        conn.close()

        probes = ["pkg000/parse_00001.py", "pkg001/", "missing/file.py"]
        start = time.perf_counter()
        for _ in range(100):
            hook_conn = sqlite3.connect(db)
            hot_map = RepoMap(repo, RepoMapTables(hook_conn))
            for p in probes:
                hot_map.exists(p)
                hot_map.neighbours(p)
                hot_map.fan_in(p)
            hook_conn.close()
        hot.append((time.perf_counter() - start) / 100)

    print(f"incremental refresh after the pull: {report}")
    print()
    print(f"{'measure':<56}{'baseline s':>12}{'tether s':>10}{'ratio':>8}")
    names = {
        "build": "first build vs git log --name-only (all history)",
        "saves": "first build, saved part way vs written once",
        "pull": f"refresh after a {PULL}-commit pull vs git log old..new",
        "noop": "refresh, nothing new vs git status",
    }
    for key, pairs in rows.items():
        base = statistics.median(b for b, _ in pairs)
        subject = statistics.median(s for _, s in pairs)
        ratio = statistics.median(s / b for b, s in pairs)
        print(f"{names[key]:<56}{base:>12.3f}{subject:>10.3f}{ratio:>7.2f}x")
    print(f"hot path (connect + open + 3 x exists/neighbours/fan_in): {statistics.median(hot) * 1000:.2f} ms")
    print(f"({args.runs} interleaved runs; ratios are medians of per-run ratios)")


if __name__ == "__main__":
    main()
