"""The read hint, one file read at a time: of a touched file's relevant gotchas, how many are in the first
three the hint lists when the agent reads that file (`hints.per_read` is 3), after the task's prompt.

`gotchas_run.py`'s `tether:after-read` scores the hints of a whole task in the commit's file order (the first
file's three are the task's first three); this scores each read on its own, which is what the hook decides.
Every (task, touched file) pair of the window where the file holds a relevant gotcha and at least two in all
(one is listed whatever the order) is one read, scored with each system restricted to that file:

- `after-read`: the hook's listing as shipped (`hooks.gotchas.gotchas_read`: recall's ranking for the
  prompt and the file);
- `after-read@age`: the listing before session 14 (`gotchas_for`: oldest first);
- `bm25:file`, `bm25:file+code+def`: `gotchas_eval`'s bm25 baselines with the file as the only touched one.

    python benchmarks/quality/gotchas_reads.py [--window dev|test] [--repo NAME]...

Prints Recall@3 per system with 95% bootstrap intervals (pooled, files with 25+ gotchas, per repository) and
each system's paired difference with `after-read`, read by read.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import bootstrap_ci, mean
from gotcha_tether import TetherAfterRead, close_all
from gotchas_build import BIG_POOL, load_labels
from gotchas_corpus import GOTCHA_REPOS, GotchaView, load
from gotchas_eval import BM25Files, BM25FilesCodeDef, GotchaRetriever

TOP_K = 3


def reads(names: Sequence[str], window: str) -> tuple[list[tuple[str, bool]], dict[str, list[float]]]:
    """Each read's repository and whether its file has 25+ gotchas, and each system's Recall@3 per read."""
    where: list[tuple[str, bool]] = []
    scores: dict[str, list[float]] = {}
    for name in names:
        corpus = load(name)
        labels = load_labels(corpus)
        on_file = corpus.by_file()
        systems: list[GotchaRetriever] = [
            TetherAfterRead(),
            TetherAfterRead(ranked=False),
            BM25Files(),
            BM25FilesCodeDef(),
        ]
        for system in systems:
            system.prepare(corpus)
        for task in corpus.tasks:
            split, _, relevant = labels.get(task.commit, ("", 0, set()))
            if split != window or not relevant:
                continue
            for path in task.files:
                gotchas = {m.id for m in on_file.get(path, ())}
                wanted = relevant & gotchas
                if not wanted or len(gotchas) < 2:
                    continue
                view = GotchaView(task.query, (path,), parent=task.parent)
                where.append((name, len(gotchas) >= BIG_POOL))
                for system in systems:
                    label = system.name.replace("tether:", "").replace("bm25:files", "bm25:file")
                    top = [i for i in system.retrieve(view, "prompt+files") if i in gotchas][:TOP_K]
                    scores.setdefault(label, []).append(len(set(top) & wanted) / len(wanted))
    close_all()
    return where, scores


def cell(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{mean(values):.3f} [{low:.2f}, {high:.2f}]"


def diff(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{mean(values):+.3f} [{low:+.2f}, {high:+.2f}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", default="dev", choices=("dev", "test"))
    parser.add_argument("--repo", action="append", help="repository short name (default: all)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    names = args.repo or [s.name for s in GOTCHA_REPOS]
    where, scores = reads(names, args.window)
    groups = {"all": [True] * len(where), f"{BIG_POOL}+ on the file": [big for _, big in where]}
    groups.update({name: [repo == name for repo, _ in where] for name in names})
    systems = list(scores)
    print(
        f"Window **{args.window}**: Recall@3 of a file's relevant gotchas in the first three listed after a read"
    )
    print("of it (reads of a file with a relevant gotcha and at least two; 95% bootstrap intervals).\n")
    print("| reads | n | " + " | ".join(systems) + " |")
    print("|---|---:|" + "---|" * len(systems))
    for label, chosen in groups.items():
        picked = {s: [v for v, keep in zip(scores[s], chosen, strict=True) if keep] for s in systems}
        if picked[systems[0]]:
            print(
                f"| {label} | {len(picked[systems[0]])} | "
                + " | ".join(cell(picked[s]) for s in systems)
                + " |"
            )
    print("\n`after-read` minus each other system, read by read (paired bootstrap 95% interval):\n")
    print("| reads | n | " + " | ".join(systems[1:]) + " |")
    print("|---|---:|" + "---|" * (len(systems) - 1))
    for label, chosen in groups.items():
        ours = [v for v, keep in zip(scores[systems[0]], chosen, strict=True) if keep]
        if not ours:
            continue
        cells = []
        for s in systems[1:]:
            theirs = [v for v, keep in zip(scores[s], chosen, strict=True) if keep]
            cells.append(diff([a - b for a, b in zip(ours, theirs, strict=True)]))
        print(f"| {label} | {len(ours)} | " + " | ".join(cells) + " |")
    print(f"\nRun time: {time.perf_counter() - started:.0f}s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
