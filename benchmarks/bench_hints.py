"""The read hint's cost: ranking a file's gotchas by recall (`hooks.gotchas.gotchas_read`, session 14) beside the
listing by age it replaced (`hooks.gotchas.gotchas_for`), and beside a prompt's recall in the same process.

    .venv/bin/python benchmarks/bench_hints.py [--size 10000] [--gotchas 5,30,100] [--runs 40]

A project of `--size` memories (bench_hooks' generated notes over size/5 files), plus a file holding each
`--gotchas` count of gotchas. One warm `Workspace` (what the resident process that answers the hooks keeps),
each call timed in turn on the same prompt and file (a load spike on this shared machine lands on all of them).
Prints medians in ms and the ratios to the listing by age and to the prompt's recall.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import WORDS, build, interleaved

from tether.adapters.hooks.gotchas import gotchas_for, gotchas_read
from tether.workspace import Workspace

PROMPT = "why does the upload retry loop back off, and where is the token refreshed?"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--gotchas", default="5,30,100")
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    counts = [int(n) for n in args.gotchas.split(",")]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="tether-bench-hints-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        root.mkdir()
        build(root, home, args.size, rng)
        with Workspace.open(root, home=home, light=True, warm=True) as ws:  # as the resident opens it
            paths = {}
            for count in counts:
                path = f"src/hints/file_{count}.py"
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text("".join(f"def step_{n}():\n    return {n}\n" for n in range(200)))
                for _ in range(count):
                    ws.add(" ".join(rng.sample(WORDS, 8)).capitalize(), category="gotcha", files=[path])
                paths[count] = path
            calls: dict[str, Callable[[], object]] = {
                "prompt recall": lambda: ws.recall(PROMPT, [], record=False)
            }
            for count, path in paths.items():
                calls[f"{count} gotchas, by age"] = lambda path=path: gotchas_for(ws, path)
                calls[f"{count} gotchas, ranked"] = lambda path=path: gotchas_read(ws, path, PROMPT)
            samples = interleaved(
                calls, args.runs
            )  # warmed first: the index's caches, the embedder, the repo map
    recall = median_ms(samples["prompt recall"])
    print(f"{args.size:,} memories, {args.runs} runs each, interleaved; medians (ms):\n")
    print("| call | ms | x by age | x prompt recall |")
    print("|---|---:|---:|---:|")
    print(f"| prompt recall | {recall:.2f} | | 1.00 |")
    for count in counts:
        aged = median_ms(samples[f"{count} gotchas, by age"])
        ranked = median_ms(samples[f"{count} gotchas, ranked"])
        print(f"| {count} gotchas, by age | {aged:.2f} | 1.00 | {aged / recall:.2f} |")
        print(f"| {count} gotchas, ranked | {ranked:.2f} | {ranked / aged:.1f} | {ranked / recall:.2f} |")


if __name__ == "__main__":
    main()
