"""Tune recall's constants on the DEV window only (never the reported test window).

Prepares tether once per repository, then scores each variant of `tether.scoring` constants in-process.

    python benchmarks/quality/tune.py [--repo NAME]... [--window dev]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import REPOS, TaskView, load_corpus
from evaluate import load_labels
from tether_retriever import TetherRetriever

from tether import scoring

# Each variant: constants to set (the rest keep their shipped values).
# The variants of the last round; earlier rounds and their numbers are in README.md ("Tuning").
VARIANTS: dict[str, dict[str, float]] = {
    "shipped": {},
    "no path text": {"PATH_TEXT_MAX": 0.0, "SEMANTIC_WITH_PATH_TERMS": False},
    "ungated text (top 50)": {"TEXT_EVIDENCE_TOP_RANK": 50},
}


def score(retriever: TetherRetriever, corpora: list, window: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for mode in ("prompt", "prompt+files"):
        recalls: list[float] = []
        injected: list[float] = []
        for corpus in corpora:
            retriever.prepare(corpus)
            labels = load_labels(corpus)
            for task in corpus.tasks:
                split, relevant = labels.get(task.commit, ("", set()))
                if split != window:
                    continue
                view = TaskView(task.query, task.files if mode == "prompt+files" else ())
                top = retriever.retrieve(view, mode)[:3]
                if relevant:
                    recalls.append(len(set(top) & relevant) / len(relevant))
                else:
                    injected.append(len(top))
        out[f"R@3 {mode}"] = statistics.fmean(recalls) if recalls else 0.0
        out[f"inj/neg {mode}"] = statistics.fmean(injected) if injected else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append")
    parser.add_argument("--window", default="dev", choices=("dev",))
    args = parser.parse_args()
    names = args.repo or [spec.name for spec in REPOS]
    corpora = [load_corpus(name) for name in names]
    shipped = {name: getattr(scoring, name) for variant in VARIANTS.values() for name in variant}
    retriever = TetherRetriever()
    print("| variant | R@3 prompt | inj/neg prompt | R@3 prompt+files | inj/neg prompt+files |")
    print("|---|---|---|---|---|")
    for label, changes in VARIANTS.items():
        for name, value in shipped.items():
            setattr(scoring, name, value)
        for name, value in changes.items():
            setattr(scoring, name, value)
        r = score(retriever, corpora, args.window)
        print(
            f"| {label} | {r['R@3 prompt']:.3f} | {r['inj/neg prompt']:.2f} | {r['R@3 prompt+files']:.3f} "
            f"| {r['inj/neg prompt+files']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
