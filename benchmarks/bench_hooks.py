"""Hook process latency: `tether hook claude UserPromptSubmit` and `PostToolUse` at 1k and 10k memories.

Each hook is a fresh process, as the agent runs it, so the figure includes interpreter start, imports,
the incremental note sync (a stat of every note), recall and the reply. Printed beside `python -c pass`
measured in the same run (the machine is shared: ratios are what to compare).

    python benchmarks/bench_hooks.py [--sizes 1000,10000] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether import notes
from tether.memory import Memory, new_id
from tether.project import init_project
from tether.workspace import Workspace

WORDS = (
    "upload retry cache token session billing refund charge invoice auth login schema migration queue worker "
    "deploy staging config logging metrics tracing router handler parser serializer client server storage "
    "bucket index search ranking embed vector timeout backoff idempotent transaction lock"
).split()
CATEGORIES = ("pref", "decision", "gotcha", "context")


def build(root: Path, home: Path, size: int, rng: random.Random) -> list[str]:
    """A git repo with `size` notes spread over ~size/5 files, indexed once."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{n}.py" for n in range(max(10, size // 5))]
    for path in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n")
    paths, _ = init_project(root, home)
    assert paths.project_notes is not None
    for _ in range(size):
        words = rng.sample(WORDS, 8)
        memory = Memory(
            id=new_id(),
            summary=" ".join(words).capitalize(),
            details=" ".join(rng.sample(WORDS, 20)),
            category=rng.choice(CATEGORIES),
            files=(rng.choice(files),),
        )
        (paths.project_notes / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    with Workspace.open(root, home=home):
        pass  # the first sync indexes everything
    return files


def timed(argv: list[str], stdin: str, cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, text=True, check=True)
        out.append(time.perf_counter() - start)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rng = random.Random(7)
    baseline = timed([sys.executable, "-c", "pass"], "", Path.cwd(), dict(os.environ), args.runs)
    base50 = statistics.median(baseline)
    print(f"baseline python -c pass: p50 {base50 * 1000:.1f} ms")
    print("| memories | hook | p50 ms | p95 ms | p50 / python -c pass |")
    print("|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="tether-bench-hooks-") as tmp:
            root, home = Path(tmp) / "repo", Path(tmp) / "home"
            home.mkdir()
            files = build(root, home, size, rng)
            env = {**os.environ, "TETHER_HOME": str(home)}
            argv = [sys.executable, "-m", "tether", "hook", "claude"]
            cases = {
                "UserPromptSubmit": {
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "why does the upload retry loop ignore the backoff config?",
                },
                "PostToolUse(Read)": {
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Read",
                    "tool_input": {"file_path": str(root / files[0])},
                    "tool_response": {},
                },
            }
            for name, extra in cases.items():
                samples = []
                for n in range(args.runs):
                    payload = {"session_id": f"bench-{name}-{n}", "cwd": str(root), **extra}
                    samples += timed([*argv, name.split("(")[0]], json.dumps(payload), root, env, 1)
                p50, p95 = statistics.median(samples), pct(samples, 0.95)
                print(f"| {size} | {name} | {p50 * 1000:.1f} | {p95 * 1000:.1f} | {p50 / base50:.1f}x |")


if __name__ == "__main__":
    main()
