"""Benchmark the repo map against plain `git log` on a generated history (`benchmarks/bigrepo.py`).

    .venv/bin/python benchmarks/bench_repomap.py [--commits 20000] [--files 3000] [--runs 7] [--cache DIR]
        [--against OTHER/src] [--breakdown] [--repo MIRROR]

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

`--against OTHER/src` runs another checkout's code (main's, say) beside this one's, each run of each in a
fresh child process (which goes first alternates), on the same repository, and prints its ratios beside
these and the median of each pair's ratio of ratios.
`--repo MIRROR` measures a real repository's history instead (a bare mirror, as `fetch` leaves under
/work/.mirror, or any clone): it is cloned once under `--cache` (where its mirror lacks blobs rename detection reads over a baseline's range,
that baseline runs `git log -M100%`, exact renames alone, as the map then reads it), and "a pull" is HEAD's last 500 first-parent
commits with everything merged through them (the line above the table says how many commits that was).
`--breakdown` prints where the pull refresh's CPU went, per step and thread (`time.thread_time`: the import
scan and the listing run in threads beside the main one, so their wall times overlap).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The code measured: this checkout's, or another's (`--against` runs this script again with this variable).
sys.path.insert(0, os.environ.get("TETHER_BENCH_SRC") or str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bigrepo

from tether.repo.map import RepoMap
from tether.store.sqlite.repomap import RepoMapTables, migrate_repomap

PULL = 500
SRC = Path(__file__).resolve().parents[1] / "src"  # this checkout's code


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def real_checkout(cache: Path, source: Path) -> Path:
    """A work tree of the repository at `source`, cloned under `cache` the first time."""
    name = source.resolve().parent.name if source.name in ("repo", ".git") else source.resolve().name
    dest = cache / f"real-{name}"
    if not (dest / ".git").exists():
        done = subprocess.run(["git", "clone", "-q", str(source), str(dest)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(
                f"could not check out {source} ({done.stderr.strip()[:300]}); a mirror missing its largest "
                "blobs cannot be checked out: try another repository"
            )
    return dest


def fresh_map(repo: Path, db: Path) -> tuple[RepoMap, sqlite3.Connection]:
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # as tether's index is opened (`store.sqlite.schema.connect`)
    migrate_repomap(conn)
    return RepoMap(repo, RepoMapTables(conn)), conn


def git_out(repo: Path, *args: str) -> None:
    done = subprocess.run(["git", *args], cwd=repo, env=bigrepo.GIT_ENV, capture_output=True, text=True)
    if done.returncode != 0:  # (a mirror missing blobs that rename detection reads, say)
        raise SystemExit(f"`git {' '.join(args)}` failed in {repo}: {done.stderr.strip()[:300]}")


@functools.cache
def renames_readable(repo: Path, *revs: str) -> bool:
    """Whether `git log` can detect renames over `revs` (a mirror may lack blobs it reads: the map then reads
    the rest of that history with exact renames alone from where `-M` failed, and the baseline reads all of
    it that way)."""
    args = ["git", "log", "-M", "--name-status", "--format=%H", *revs]
    return subprocess.run(args, cwd=repo, env=bigrepo.GIT_ENV, capture_output=True).returncode == 0


def log_args(repo: Path, *revs: str) -> list[str]:
    return ["log", *revs] if renames_readable(repo, *revs) else ["log", "-M100%", *revs]


ROWS = {
    "build": "first build vs git log --name-only (all history)",
    "saves": "first build, saved part way vs written once",
    "pull": f"refresh after a {PULL}-commit pull vs git log old..new",
    "noop": "refresh, nothing new vs git status",
}
# Steps of the pull refresh whose CPU `--breakdown` reports: (module, class or None, function, label).
STEPS = [
    ("tether.repo.refresh", "Refresh", "run", "main thread, all of it"),
    ("tether.store.sqlite.repomap", "RepoMapTables", "cached_imports", "  load the import cache"),
    ("tether.store.sqlite.repomap", "RepoMapTables", "fan_ins", "  load fan-in counts (each call)"),
    ("tether.store.sqlite.repomap", "RepoMapTables", "path_ids", "  load path ids (each call)"),
    ("tether.repo.refresh", "Refresh", "_read", "  git log: parse, count co-change"),
    ("tether.repo.refresh", None, "_counted", "  fan-in brought up to date"),
    ("tether.repo.refresh", "Refresh", "_apply", "  write co-change"),
    ("tether.store.sqlite.repomap", "RepoMapTables", "set_files", "  write files"),
    ("tether.store.sqlite.repomap", "RepoMapTables", "put_imports", "  write the import cache"),
    ("tether.repo.refresh", "Refresh", "_write_fan_in", "  write fan-in"),
    ("tether.repo.refresh", "Refresh", "_list", "listing thread (git ls-files)"),
    ("tether.repo.refresh", "Refresh", "_scan", "scan thread (read, parse changed files)"),
]


class Breakdown:
    """CPU time (`time.thread_time`, of the thread that ran it) per step of `STEPS`, while `on`."""

    def __init__(self) -> None:
        import importlib

        self.on = False
        self.times: dict[str, list[float]] = {}
        for module, cls, name, label in STEPS:
            owner = getattr(importlib.import_module(module), cls) if cls else importlib.import_module(module)
            if hasattr(owner, name):  # (another checkout's code may not have the step)
                setattr(owner, name, self._wrap(getattr(owner, name), label))

    def _wrap(self, fn: Callable[..., object], label: str) -> Callable[..., object]:
        @functools.wraps(fn)
        def timed_step(*args: object, **kwargs: object) -> object:
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.on:
                    self.times.setdefault(label, []).append(time.thread_time() - start)

        return timed_step

    def run(self) -> dict[str, float]:
        """The CPU of each step over one refresh (what the last `on` stretch recorded), then reset."""
        out = {label: sum(v) for label, v in self.times.items()}
        self.times = {}
        return out


def one_run(repo: Path, top: str, db: Path, breakdown: Breakdown | None) -> dict[str, object]:
    """Every row's (baseline, subject) seconds for one run, the hot path's, and the pull's report."""
    rows: dict[str, tuple[float, float]] = {}
    git_out(repo, "reset", "-q", "--hard", top)
    base = timed(lambda: git_out(repo, *log_args(repo), "--name-only", "--format=%H"))  # (all of HEAD's)
    rm, conn = fresh_map(repo, db)
    build = timed(rm.refresh)
    rows["build"] = (base, build)
    conn.close()
    once, conn = fresh_map(repo, db)
    rows["saves"] = (timed(lambda: once.refresh(checkpoint=10**9)), build)
    conn.close()

    git_out(repo, "reset", "-q", "--hard", f"{top}~{PULL}")
    rm, conn = fresh_map(repo, db)
    rm.refresh()
    git_out(repo, "reset", "-q", "--hard", top)
    pulled = f"{top}~{PULL}..{top}"
    base = timed(lambda: git_out(repo, *log_args(repo, pulled), "--name-status"))
    if breakdown is not None:
        breakdown.on = True
    start = time.perf_counter()
    report = rm.refresh()
    rows["pull"] = (base, time.perf_counter() - start)
    if breakdown is not None:
        breakdown.on = False

    base = timed(lambda: git_out(repo, "status", "--porcelain"))
    rows["noop"] = (base, timed(rm.refresh))
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
    return {
        "rows": rows,
        "hot": (time.perf_counter() - start) / 100,
        "report": f"{report.new_commits} new commits, {len(report.renames)} renames, {report.files} files",
        "steps": breakdown.run() if breakdown is not None else {},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=3_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tether-bench")
    parser.add_argument("--against", type=Path, default=None, help="another checkout's src/ to compare with")
    parser.add_argument("--breakdown", action="store_true", help="the pull refresh's CPU per step")
    parser.add_argument("--repo", type=Path, default=None, help="a real repository's mirror instead")
    parser.add_argument("--one-run", action="store_true", help=argparse.SUPPRESS)  # a child of --against
    args = parser.parse_args()

    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.repo is not None:
        repo = real_checkout(args.cache, args.repo)
    else:
        repo = bigrepo.cached(args.cache, args.commits, args.files)
    top = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    breakdown = Breakdown() if args.breakdown else None
    if args.one_run:
        print(json.dumps(one_run(repo, top, args.cache / "bench-repomap-against.db", breakdown)))
        return
    commits = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    pulled = subprocess.run(
        ["git", "rev-list", "--count", f"HEAD~{PULL}..HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"repository: {repo} ({commits} commits, ready in {time.perf_counter() - started:.1f}s); "
        f"the pull: {pulled} commits"
    )
    runs: dict[str, list[dict[str, object]]] = {"this": [], "against": []}
    for n in range(args.runs):
        sides = ["this", "against"] if args.against else ["this"]
        for side in sides if n % 2 == 0 else sides[::-1]:  # alternate who goes first
            if not args.against:
                runs[side].append(one_run(repo, top, args.cache / "bench-repomap.db", breakdown))
            else:  # both sides in a fresh process each run: neither carries the other's heap
                runs[side].append(other_run(args, SRC if side == "this" else args.against))
    print(f"incremental refresh after the pull: {runs['this'][-1]['report']}")
    print()
    print(
        f"{'measure':<56}{'baseline s':>12}{'tether s':>10}{'ratio':>8}"
        + ("   against  pairs" if args.against else "")
    )
    for key, name in ROWS.items():
        pairs = [r["rows"][key] for r in runs["this"]]  # type: ignore[index]
        base = statistics.median(b for b, _ in pairs)
        subject = statistics.median(s for _, s in pairs)
        ratios = [s / b for b, s in pairs]
        line = f"{name:<56}{base:>12.3f}{subject:>10.3f}{statistics.median(ratios):>7.2f}x"
        if args.against:
            theirs = [s / b for b, s in (r["rows"][key] for r in runs["against"])]  # type: ignore[index]
            per_pair = [a / b for a, b in zip(ratios, theirs, strict=True)]
            line += f"{statistics.median(theirs):>9.2f}x {statistics.median(per_pair):>5.2f}x"
        print(line)
    hot = statistics.median(float(r["hot"]) for r in runs["this"])  # type: ignore[arg-type]
    print(f"hot path (connect + open + 3 x exists/neighbours/fan_in): {hot * 1000:.2f} ms")
    print(f"({args.runs} interleaved runs; ratios are medians of per-run ratios", end="")
    print(
        f"; against {args.against}: its ratios, and the median of ours / its per run)"
        if args.against
        else ")"
    )
    if breakdown is not None:
        print()
        print(
            f"pull refresh, CPU per step (ms, median of runs){'':<14}{'this':>8}"
            + ("  against" if args.against else "")
        )
        for _, _, _, label in STEPS:
            cells = []
            for side in ("this", "against") if args.against else ("this",):
                values = [r["steps"].get(label) for r in runs[side]]  # type: ignore[attr-defined]
                known = [v for v in values if v is not None]
                cells.append(f"{statistics.median(known) * 1000:8.1f}" if known else f"{'-':>8}")
            print(f"{label:<62}{''.join(cells)}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def other_run(args: argparse.Namespace, src: Path) -> dict[str, object]:
    """One run of this script on the code in `src`, in a child process (same repository and cache)."""
    argv = [sys.executable, __file__, "--one-run", "--commits", str(args.commits), "--files", str(args.files)]
    argv += ["--cache", str(args.cache)] + (["--breakdown"] if args.breakdown else [])
    argv += ["--repo", str(args.repo)] if args.repo is not None else []
    env = {**os.environ, "TETHER_BENCH_SRC": str(src.resolve())}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
