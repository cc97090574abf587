"""What the recent-change channel costs recall (`tether.repo.recent`, issue 17): the lines the last commits of
1, 3 and 8 touched files changed, interleaved run by run on a generated history (`benchmarks/bigrepo.py`).

1. In this process: asked of git with nothing kept (`rev-list`, `log`, a diff per file: a process with no
   index) and warm (a long-lived process: kept while HEAD and the file stay), beside one
   `git diff -U0 HEAD -- FILE` process (the least any question to git about a file costs).
2. In a fresh process, as a hook without the resident process runs it (the call timed inside the process,
   after its imports and the index's open): with no index (git as above), with the index's window of HEAD's
   last commits (a diff per file: the file changed or HEAD moved since its lines were kept), and with the
   lines the index keeps (nothing changed). Beside `python -c pass` and one git diff process.
3. `--hooks`: the UserPromptSubmit hook without the resident process (`TETHER_RESIDENT=0`) on a project
   over that history, in a session that read a file with memories anchored on it (so recall has a touched
   file: the channel runs), this tree's against `--against`'s (another checkout's `src`, e.g. main's),
   beside `python -c pass`.

    python benchmarks/bench_recent.py [--commits 5000] [--files 3000] [--runs 9] [--cache DIR]
        [--hooks --against OTHER/src] [--repo CHECKOUT]

Ratios are medians of the per-run ratios to the baseline timed just before.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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


_FRESH = """
import sys, time
from pathlib import Path
from tether.repo.recent import recent_lines
from tether.store.sqlite.store import SQLiteStore
db, root, mode, *paths = sys.argv[1:]
tables = SQLiteStore(Path(db)).repomap() if mode != "git" else None
started = time.perf_counter()
recent_lines(Path(root), paths, 3, 1000, tables)
print(time.perf_counter() - started)
"""


def _index(cache: Path, repo: Path) -> Path:
    """An index whose repo map is refreshed at the repository's HEAD (its window of HEAD's last commits)."""
    from tether.repo.map import RepoMap
    from tether.store.sqlite.store import SQLiteStore

    db = cache / f"{repo.name}-recent.db"
    store = SQLiteStore(db)
    RepoMap(repo, store.repomap()).refresh()
    assert store.repomap().state().get("recent_window"), "the window was not recorded"
    store.close()
    return db


def _fresh(db: Path, repo: Path, mode: str, paths: list[str]) -> tuple[float, float]:
    """(the call inside a fresh process, the whole process) for `mode`: "git", "window" or "stored"."""
    if mode == "window":
        import sqlite3

        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM repomap_recent_lines")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, str(db), str(repo), mode, *paths],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip()), time.perf_counter() - started


def _process(
    argv: list[str], stdin: str = "", env: dict[str, str] | None = None, cwd: Path | None = None
) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - started


def _table(title: str, rows: dict[str, list[tuple[float, float]]], floor_name: str) -> None:
    print(f"\n{title}")
    print(f"| case | ms (median) | {floor_name}, ms | ratio (median of runs) |")
    print("|---|---:|---:|---:|")
    for name, pairs in rows.items():
        took = statistics.median(p[0] for p in pairs) * 1000
        floor = statistics.median(p[1] for p in pairs) * 1000
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"| {name} | {took:.2f} | {floor:.2f} | {ratio:.2f}x |")


def fresh_processes(cache: Path, repo: Path, sets: dict[int, list[str]], runs: int) -> None:
    db = _index(cache, repo)
    for paths in sets.values():
        _fresh(db, repo, "stored", paths)  # the lines kept
    inside: dict[str, list[tuple[float, float]]] = {}
    whole: dict[str, list[tuple[float, float]]] = {}
    for _ in range(runs):
        for n, paths in sets.items():
            for mode in ("git", "window", "stored"):
                floor = _process([sys.executable, "-c", "pass"])
                diff = _git(repo, paths[0])
                call, process = _fresh(db, repo, mode, paths)
                inside.setdefault(f"{n} file(s), {mode}", []).append((call, diff))
                whole.setdefault(f"{n} file(s), {mode}", []).append((process, floor))
    _table("in a fresh process: the call, against one git diff process", inside, "git diff")
    _table("the whole fresh process (imports, index open, the call)", whole, "python -c pass")


def hooks(cache: Path, repo: Path, against: Path, runs: int, target: str) -> None:
    """The PostToolUse(Read) hook without the resident process, this tree's against `against`'s."""
    here = Path(__file__).resolve().parents[1] / "src"
    work = cache / "hook-project"
    if work.exists():
        shutil.rmtree(work)
    root, home = work / "repo", work / "home"
    subprocess.run(["git", "clone", "-q", "--local", str(repo), str(root)], check=True)
    home.mkdir()
    env = {**os.environ, "TETHER_HOME": str(home), "TETHER_RESIDENT": "0"}
    tether = [sys.executable, "-m", "tether"]
    lines = len((root / target).read_text(encoding="utf-8").splitlines())
    subprocess.run([*tether, "init"], cwd=root, env=env, check=True, capture_output=True)
    for n in range(12):
        first = 1 + (n * 7) % max(1, lines - 3)
        at = f"{target}:{first}-{min(lines, first + 2)}"
        argv = [*tether, "add", "-c", "gotcha", "--at", at, f"gotcha {n} about the code at {at}"]
        subprocess.run(argv, cwd=root, env={**env, "PYTHONPATH": str(here)}, check=True, capture_output=True)
    subprocess.run(
        [*tether, "maintain"], cwd=root, env={**env, "PYTHONPATH": str(here)}, check=True, capture_output=True
    )
    read = {
        "hook_event_name": "PostToolUse",
        "cwd": str(root),
        "tool_name": "Read",
        "tool_input": {"file_path": str(root / target)},
        "tool_response": {},
    }
    ask = {
        "hook_event_name": "UserPromptSubmit",
        "cwd": str(root),
        "prompt": "why does the retry loop stall?",
    }
    hook = [*tether, "hook", "claude"]
    rows: dict[str, list[tuple[float, float]]] = {}
    for n in range(runs):
        for label, src in (("this tree", here), ("--against", against)):
            run_env = {**env, "PYTHONPATH": str(src)}
            session = f"bench-{label}-{n}"
            # the session read the file (untimed): the prompt's recall has it as a touched file
            _process([*hook, "PostToolUse"], json.dumps({**read, "session_id": session}), run_env, root)
            floor = _process([sys.executable, "-c", "pass"])
            stdin = json.dumps({**ask, "session_id": session})
            took = _process([*hook, "UserPromptSubmit"], stdin, run_env, root)
            rows.setdefault(f"UserPromptSubmit after a Read, {label}", []).append((took, floor))
    print(f"\nhook without the resident process: {target} ({lines} lines, 12 memories anchored on it)")
    _table(f"(--against {against})", rows, "python -c pass")
    mine, theirs = rows.values()
    paired = statistics.median(a[0] / b[0] for a, b in zip(mine, theirs, strict=True))
    print(f"this tree / --against, median of the runs' pairs: {paired:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=5_000)
    parser.add_argument("--files", type=int, default=3_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tether-bench-recent")
    parser.add_argument("--hooks", action="store_true", help="also time the hook (needs --against)")
    parser.add_argument("--against", type=Path, help="another checkout's src for the hook's comparison")
    parser.add_argument("--repo", type=Path, help="a checkout to measure on instead of a generated history")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    repo = args.repo.resolve() if args.repo else bigrepo.cached(args.cache, args.commits, args.files)
    if args.repo:
        counted = subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
        )
        args.commits = int(counted.stdout.strip())
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.splitlines()
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
    _table("in this process: asked of git (cold) and kept (warm)", rows, "git diff")
    fresh_processes(args.cache, repo, sets, args.runs)
    if args.hooks:
        if args.against is None:
            parser.error("--hooks needs --against OTHER/src")
        hooks(args.cache, repo, args.against.resolve(), args.runs, sets[1][0])


if __name__ == "__main__":
    main()
