"""A session start without the resident process (`TETHER_RESIDENT=0`), beside `python -c pass`, and beside
another checkout's code on the same project (`--against`, e.g. a worktree of main).

For each size: one project (real note files, 25 past sessions, indexed once), copied for the other code, so
neither's writes (its stamps, its scans) change what the other finds. Then `--runs` rounds, each of
`python -c pass` then a session start, for this checkout's code and then the other's (`PYTHONPATH`), every
session start a new session, as agents start them. Every figure is a ratio to the `python -c pass` run just
before it (the machine is shared).

    python benchmarks/bench_session_start.py [--sizes 1000,10000] [--runs 15] [--against ../main/src]
"""

from __future__ import annotations

import argparse
import compileall
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

from bench_hooks import build
from bench_resident import PAST_SESSIONS, past_sessions

HERE = Path(__file__).resolve().parents[1] / "src"


def run(
    argv: list[str], cwd: Path, stdin: bytes = b"", src: Path | None = None, home: Path | None = None
) -> float:
    env = {**os.environ, "TETHER_RESIDENT": "0"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    if home is not None:
        env["TETHER_HOME"] = str(home)
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, check=True)
    return time.perf_counter() - started


def measure(size: int, runs: int, against: Path | None, tmp: Path) -> None:
    project = tmp / f"p{size}"
    (project / "home").mkdir(parents=True)
    build(project / "repo", project / "home", size, random.Random(7))
    past_sessions(project / "repo", project / "home", PAST_SESSIONS)
    variants = {"this checkout": (HERE, project)}
    if against is not None:
        other = tmp / f"p{size}-other"
        shutil.copytree(project, other, symlinks=True)
        variants["--against"] = (against, other)
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    walls: dict[str, list[float]] = {name: [] for name in variants}
    for n in range(runs + 1):  # the first round warms the file cache
        for name, (src, where) in variants.items():
            root = where / "repo"
            base = run([sys.executable, "-c", "pass"], root)
            body = {"session_id": f"s{time.time_ns()}", "cwd": str(root), "source": "startup"}
            payload = json.dumps({**body, "hook_event_name": "SessionStart"}).encode()
            argv = [sys.executable, "-m", "tether", "hook", "claude", "SessionStart"]
            wall = run(argv, root, payload, src, where / "home")
            if n:
                ratios[name].append(wall / base)
                walls[name].append(wall)
    for name, values in ratios.items():
        ordered = sorted(values)
        print(
            f"| {size} | {name} | {statistics.median(values):.2f}x (p25 {ordered[len(values) // 4]:.2f}x, "
            f"p75 {ordered[3 * len(values) // 4]:.2f}x) | {statistics.median(walls[name]) * 1000:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", type=Path, default=None, help="another checkout's src/ to compare with")
    args = parser.parse_args()
    for src in (HERE, args.against):
        if src is not None:  # modules compiled once, as an installed package's are
            compileall.compile_dir(str(src / "tether"), quiet=1)
    print("| memories | code | session start without the resident / python -c pass | ms |")
    print("|---|---|---|---|")
    # A detached housekeeping process a session start began may still be writing its log at the end.
    with tempfile.TemporaryDirectory(prefix="bench-session-start-", ignore_cleanup_errors=True) as tmp:
        for size in (int(s) for s in args.sizes.split(",") if s):
            measure(size, args.runs, args.against, Path(tmp))


if __name__ == "__main__":
    main()
