"""Anchors: their re-resolution on sync at 10k anchored memories, and the before-edit hook's cost with them.

Two workspaces over the same generated repository (Python files of ten functions each), one whose memories
are anchored (half to a function, half to a comment's lines) and one whose identical memories name only
their files. Runs are interleaved (anchored, plain, anchored, ...) so the shared machine's load falls on
both alike; what to compare are the ratios.

1. Sync: `refresh_repo` (repo map refresh, rename following and, with anchors, the re-resolution pass) with
   nothing changed, and after code was inserted at the top of 10% of the files (every anchor there moves:
   resolved again and its note rewritten).
2. Recall with a touched file in process (`Workspace.recall(prompt, [file])`): with anchors the prompt's
   words are also looked for in the code around each anchor of the file (`places.place_channel`).
3. The before-edit hook (`tether hook claude PreToolUse` with an Edit inside one function of a file with ten
   gotchas, a fresh process as Claude Code runs it) at 1k and 10k memories, beside `python -c pass`; timed
   after one settling hook (the first hook after a command that rewrote notes re-scans the note directory).

    python benchmarks/bench_anchors.py [--sizes 1000,10000] [--runs 9] [--quick]
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

from tether.anchors.resolve import FileView, make
from tether.lifecycle.housekeeping import refresh_repo
from tether.model.memory import Memory, new_id
from tether.notes import format as notes
from tether.project import init_project
from tether.workspace import Workspace

WORDS = "charge refund retry token cache session upload queue worker deploy schema lock index vector".split()
FUNCTIONS = 10


def source(n: int) -> str:
    parts = ["import os\n\n"]
    for f in range(FUNCTIONS):
        parts.append(
            f"\ndef {WORDS[f % len(WORDS)]}_{n}_{f}(value):\n"
            f"    # NOTE: {WORDS[(f + n) % len(WORDS)]} must stay idempotent here ({n}, {f})\n"
            f"    total = value + {f}\n"
            f"    return total * {n}\n\n"
        )
    return "".join(parts)


def build(base: Path, size: int, anchored: bool, rng: random.Random) -> tuple[Path, Path, list[str]]:
    """A git repository with size/10 files and `size` memories (anchored or not), indexed once."""
    root, home = base / ("anchored" if anchored else "plain"), base / f"home-{anchored}"
    root.mkdir(parents=True)
    home.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [f"src/mod{n // 50}/file{n}.py" for n in range(max(1, size // FUNCTIONS))]
    for n, path in enumerate(files):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source(n), encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "code"], check=True, env=env)
    paths, _ = init_project(root, home)
    assert paths.project_notes is not None
    for index in range(size):
        n, f = divmod(index, FUNCTIONS)
        path = files[n % len(files)]
        anchors = ()
        if anchored:
            view = FileView.read(root, path)
            name = f"{WORDS[f % len(WORDS)]}_{n % len(files)}_{f}"
            definition = view.symbol(name)
            assert definition is not None, name
            if index % 2:
                anchors = (make(view, name, None),)
            else:
                anchors = (make(view, "", (definition.start + 1, definition.start + 1)),)
        memory = Memory(
            id=new_id(),
            summary=" ".join(rng.sample(WORDS, 6)).capitalize() + f" {index}",
            category="gotcha",
            files=(path,),
            anchors=anchors,
        )
        (paths.project_notes / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    with Workspace.open(root, home=home) as ws:
        refresh_repo(ws)  # the repo map, and the anchors' first pass
    return root, home, files


def timed_refresh(root: Path, home: Path) -> float:
    with Workspace.open(root, home=home) as ws:
        start = time.perf_counter()
        refresh_repo(ws)
        return time.perf_counter() - start


def shift(root: Path, files: list[str], rng: random.Random, share: float = 0.1) -> None:
    for path in rng.sample(files, max(1, int(len(files) * share))):
        target = root / path
        target.write_text("import sys\nLIMIT = 3\n\n" + target.read_text(encoding="utf-8"), encoding="utf-8")


def timed_recall(root: Path, home: Path, files: list[str]) -> float:
    """Seconds of one in-process recall with a prompt and a touched file, for each of `files` (median)."""
    ws = Workspace.open(root, home=home)
    try:
        ws.recall("why must the upload stay idempotent", [files[0]], record=False)  # warm: caches, index
        times = []
        for path in files:
            started = time.perf_counter()
            ws.recall("why must the upload retry stay idempotent here", [path], record=False)
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    finally:
        ws.close()


def hook_payload(root: Path, path: str) -> str:
    text = (root / path).read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("    total = value + 4"))
    return json.dumps(
        {
            "session_id": f"bench-{random.random()}",
            "cwd": str(root),
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(root / path), "old_string": old, "new_string": old + " + 1"},
        }
    )


def run(argv: list[str], stdin: str, cwd: Path, home: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv,
        input=stdin,
        cwd=cwd,
        env={**os.environ, "TETHER_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="1000 memories, 3 runs")
    args = parser.parse_args()
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 3 if args.quick else args.runs
    rng = random.Random(7)
    print(f"# bench_anchors: sizes {sizes}, {runs} interleaved runs each (medians)\n")
    hook = [sys.executable, "-m", "tether", "hook", "claude", "PreToolUse"]
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="tether-bench-anchors-") as tmp:
            base = Path(tmp)
            started = time.perf_counter()
            setups = {kind: build(base, size, kind == "anchored", rng) for kind in ("anchored", "plain")}
            print(
                f"## {size} memories over {len(setups['plain'][2])} files (built in {time.perf_counter() - started:.0f}s)\n"
            )
            idle: dict[str, list[float]] = {"anchored": [], "plain": []}
            moved: dict[str, list[float]] = {"anchored": [], "plain": []}
            edit: dict[str, list[float]] = {"anchored": [], "plain": [], "python -c pass": []}
            recall: dict[str, list[float]] = {"anchored": [], "plain": []}
            for _ in range(runs):
                for kind, (root, home, files) in setups.items():
                    timed_refresh(root, home)  # settle: what the previous run's hook indexed
                    idle[kind].append(timed_refresh(root, home))
                    shift(root, files, random.Random(len(idle[kind])))
                    moved[kind].append(timed_refresh(root, home))
                    # The notes the pass rewrote are indexed already; the hook's first sync after a
                    # command still re-scans the note directory once (it trusts its mtime): settle it.
                    run(hook, hook_payload(root, files[1]), root, home)
                    edit[kind].append(run(hook, hook_payload(root, files[0]), root, home))
                    recall[kind].append(timed_recall(root, home, files[:3]))
                edit["python -c pass"].append(run([sys.executable, "-c", "pass"], "", base, base))
            print("| what | anchored (ms) | plain (ms) | ratio |")
            print("|---|---:|---:|---:|")
            for label, data in (
                ("sync, nothing changed", idle),
                ("sync, 10% of files shifted", moved),
                ("recall with a touched file (in process)", recall),
            ):
                a, p = median_ms(data["anchored"]), median_ms(data["plain"])
                print(f"| {label} | {a:.0f} | {p:.0f} | {a / p:.2f} |")
            a, p, py = (median_ms(edit[k]) for k in ("anchored", "plain", "python -c pass"))
            print(f"| before-edit hook (process) | {a:.0f} | {p:.0f} | {a / p:.2f} |")
            print(f"| python -c pass | {py:.0f} | | |\n")


if __name__ == "__main__":
    main()
