"""Benchmark the repo map against plain `git log` on a generated 20,000-commit history.

    .venv/bin/python benchmarks/bench_repomap.py [--commits 20000] [--wide 20000] [--keep DIR]

Builds the repository with `git fast-import` (a few hundred Python files in a dozen directories, 1-5
files per commit, mostly drawn from correlated groups, some renames and a few sweeping commits), then
measures in one run:

1. `git log --name-only` over the whole history (the baseline), and `git log -M --name-status`
   (the command the map runs, so git's share of the build is visible);
2. the full repo map build (files, renames, co-change, fan-in) into a fresh SQLite file;
3. the incremental refresh after one more commit;
4. the hot path a hook uses (open + exists + neighbours + fan_in) after adding `--wide` untracked files.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.repo.map import RepoMap
from tether.store.sqlite.repomap import migrate_repomap

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, input=stdin, capture_output=True, check=True
    ).stdout


def generate(repo: Path, commits: int, seed: int = 7) -> dict[str, int]:
    """Write a fast-import stream for `commits` commits on main and import it."""
    rng = random.Random(seed)
    dirs = [f"pkg{d:02}" for d in range(12)]
    files = [f"{d}/mod{i:02}.py" for d in dirs for i in range(25)]  # 300 files
    groups = [rng.sample(files, rng.randint(3, 5)) for _ in range(60)]
    renames = sweeps = 0
    out: list[bytes] = []

    def blob(path: str, rev: int) -> bytes:
        d, name = path.rsplit("/", 1)
        text = f"# {path} rev {rev}\n"
        if name.startswith("mod"):
            text += f"from {d} import mod{(int(name[3:5]) + 1) % 25:02}\nimport {rng.choice(dirs)}.mod00\n"
        data = text.encode()
        return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)

    stamp = 1_600_000_000
    for n in range(commits):
        lines = [b"commit refs/heads/main\n", b"committer bench <b@b> %d +0000\n" % (stamp + n * 60)]
        msg = b"c%d" % n
        lines.append(b"data %d\n%s\n" % (len(msg), msg))
        if n == 0:
            lines.extend(blob(f, n) for f in files)
            lines.extend(blob(f"{d}/__init__.py", n) for d in dirs)
        elif n % 997 == 0:  # a sweep: skipped by the co-change counts
            sweeps += 1
            lines.extend(blob(f, n) for f in rng.sample(files, 40))
        elif n % 401 == 0:  # a rename, followed by the map
            old = rng.choice(files)
            new = old.replace(".py", f"_v{n}.py")
            files[files.index(old)] = new
            for g in groups:
                if old in g:
                    g[g.index(old)] = new
            lines.append(b"R %s %s\n" % (old.encode(), new.encode()))
            renames += 1
        else:
            if rng.random() < 0.7:
                group = rng.choice(groups)
                touched = rng.sample(group, rng.randint(min(2, len(group)), len(group)))
            else:
                touched = rng.sample(files, rng.randint(1, 3))
            lines.extend(blob(f, n) for f in touched)
        out.append(b"".join(lines))
    git(repo, "fast-import", "--quiet", stdin=b"".join(out))
    git(repo, "checkout", "-q", "-f", "main")
    return {"files": len(files) + len(dirs), "renames": renames, "sweeps": sweeps}


T = TypeVar("T")


def timed(fn: Callable[..., T], *args: object) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument(
        "--wide", type=int, default=20_000, help="untracked files added for the hot-path test"
    )
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_repomap_"))
    repo = work / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    gen_time, shape = timed(generate, repo, args.commits)
    print(f"generated {args.commits} commits ({shape}) with fast-import in {gen_time:.2f}s")

    base_t, _ = timed(git, repo, "log", "--name-only", "--format=%H")
    status_t, _ = timed(git, repo, "log", "--no-merges", "-M", "--name-status", "-z", "--format=%H")

    db = work / "index.db"
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate_repomap(conn)
    rm = RepoMap.open(repo, conn)
    full_t, report = timed(rm.refresh)
    print(f"full build: {report}")

    (repo / "pkg00/mod00.py").write_text("# one more\n")
    (repo / "pkg01/mod01.py").write_text("# one more\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one more")
    inc_t, inc = timed(rm.refresh)
    print(f"incremental: {inc}")
    noop_t, _ = timed(rm.refresh)

    print()
    print(f"{'measure':<44}{'seconds':>10}{'x git log':>12}")
    rows = [
        ("git log --name-only (baseline)", base_t),
        ("git log -M --name-status (what the map runs)", status_t),
        ("repo map full build", full_t),
        ("repo map refresh after one commit", inc_t),
        ("repo map refresh, nothing changed", noop_t),
    ]
    for name, seconds in rows:
        print(f"{name:<44}{seconds:>10.3f}{seconds / base_t:>12.3f}")

    # Hot path: a fresh connection, as a hook has, over a work tree of `--wide` more files.
    wide_dir = repo / "wide"
    for i in range(args.wide):
        sub = wide_dir / f"d{i // 200:03}"
        if i % 200 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:05}.py").write_text(f"from wide.d000 import f{(i + 1) % 200:05}\n")
    wide_t, wide = timed(rm.refresh)
    print(f"\nrefresh after adding {args.wide} untracked files: {wide_t:.3f}s ({wide})")
    probes = ["pkg00/mod00.py", "pkg03/", "wide/d050/f10001.py", "missing/file.py"]
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        hook_conn = sqlite3.connect(db)
        hot = RepoMap.open(repo, hook_conn)
        for p in probes:
            hot.exists(p)
            hot.neighbours(p)
            hot.fan_in(p)
        hook_conn.close()
    per = (time.perf_counter() - start) / rounds * 1000
    print(f"hot path (connect + open + 4 x exists/neighbours/fan_in): {per:.2f} ms per prompt")
    print(f"example: neighbours(pkg00/mod00.py) = {rm.neighbours('pkg00/mod00.py')}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
