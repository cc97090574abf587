"""A session's first prompt with work in progress in the tree, or a file it names: what they cost the prompt hook.

    .venv/bin/python benchmarks/bench_first_prompt.py [--size 10000] [--changed 3] [--runs 40]

Before the agent touches anything, the prompt hook asks git for the work tree's changes since HEAD
(`repo.worktree.in_progress`: a `git diff` and a `git ls-files --others`, side by side) and recalls with the
latest few as the touched files when the prompt is about them (`recall.work.recall_with_work`: two or three
recalls, with the work and without). A project of `--size` memories (bench_hooks' generated notes over size/5
files), all committed, then `--changed` files edited; beside it a second work tree on a branch where the same
edits are committed (a clean tree: `in_progress` reads the branch's own commits). One warm `Workspace` (what the resident process that
answers the hooks keeps); each call timed in turn (a load spike on this shared machine lands on all of them).
Files the prompt names (`recall.named.take_named`): a prompt naming none, and one naming a changed file by its
name, looked up among the repo map's paths.
Prints medians in ms and the ratios to the prompt's recall without files (what the hook did before).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import build, interleaved

from tether.recall.named import take_named
from tether.recall.work import recall_with_work
from tether.repo.worktree import in_progress
from tether.workspace import Workspace

PROMPT = "why does the upload retry loop back off, and where is the token refreshed?"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=root, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="tether-bench-first-prompt-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        root.mkdir()
        files = build(root, home, args.size, rng)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "everything")
        # A user's tree is older than its index: git trusts the stat of every file. Right after a commit of
        # files written the same second it re-reads each one (git's racy entries), which no session start sees.
        time.sleep(1.1)
        git(root, "update-index", "-q", "--refresh")
        # The same work committed on a branch, in a second work tree of the repository, clean: what a session
        # resuming a feature branch finds (`in_progress` reads the branch's own commits since it left main).
        branch = Path(tmp) / "branch"
        git(root, "worktree", "add", "-q", "-b", "feature", str(branch))
        changed = rng.sample(files, args.changed)
        for path in changed:
            (branch / path).write_text("x = 2\n")
        git(branch, "commit", "-q", "-am", "the work")
        for path in changed:
            (root / path).write_text("x = 2\n")
        with Workspace.open(root, home=home, light=True, warm=True) as ws:  # as the resident opens it
            repo = ws.repo_map()
            assert repo is not None
            repo.refresh()  # the hook's first prompt starts the map's build; a session's later ones have it
            name = Path(changed[0]).name
            named = f"{PROMPT} It is in {name}."
            calls: dict[str, Callable[[], object]] = {
                "prompt recall, no files (before)": lambda: ws.recall(PROMPT, [], record=False),  # names none
                "files the prompt names, none (the words read)": lambda: take_named(PROMPT, root, repo, []),
                "files the prompt names, a file name (the repo map's paths read)": lambda: take_named(
                    named, root, repo, []
                ),
                "the prompt's recall with the file it names": lambda: ws.recall(named, [], record=False),
                "work in progress (git)": lambda: in_progress(root),
                "work in progress, committed on a clean branch (git)": lambda: in_progress(branch),
                "the first prompt's recall with it (now)": lambda: recall_with_work(
                    ws.recaller(), PROMPT, in_progress(root), record=False
                ),
            }
            samples = interleaved(
                calls, args.runs
            )  # warmed first: the index's caches, the repo map, git's index stat
    before = statistics.median(samples["prompt recall, no files (before)"]) * 1000
    print(
        f"{args.size:,} memories over {len(files):,} committed files, {args.changed} changed; {args.runs} runs "
        f"each, interleaved; medians (ms):\n"
    )
    print("| call | ms | x before |")
    print("|---|---:|---:|")
    for name, values in samples.items():
        ms = statistics.median(values) * 1000
        print(f"| {name} | {ms:.2f} | {ms / before:.2f} |")


if __name__ == "__main__":
    main()
