"""Tune recall on the DEV window only (never the reported test window).

Prepares tether once per repository, then scores each variant in-process: a variant sets constants of
`tether.scoring` and may swap the `Recaller` class (a ranking idea tried here before it goes into src/).

    python benchmarks/quality/tune.py [--repo NAME]... [--variant NAME]... [--per-repo]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import REPOS, Corpus, TaskView, load_corpus
from evaluate import BM25Retriever, ScopeBM25Retriever, load_labels
from product import attach
from tether_retriever import (
    DirSpecificRecaller,
    PathCoverageRecaller,
    PathRarityRecaller,
    PathTiebreakRecaller,
    Recaller,
    RuleScopeDirSpecificRecaller,
    RuleScopeRecaller,
    TetherRetriever,
    scoring,
)


@dataclass(frozen=True)
class Variant:
    constants: dict[str, object] = field(default_factory=dict)
    recaller: type[Recaller] = Recaller
    require_evidence: bool = True


def text_magnitude_sqrt_coverage(bm25: float, best: float, coverage: float) -> float:
    """Text magnitude with the square root of the query coverage: a 25-term commit message matched on 5
    terms (coverage 0.2) keeps 0.45 of the bm25 share instead of 0.2."""
    if best <= 0.0:
        return 0.0
    return scoring.TEXT_MAX * min(bm25 / best, 1.0) * coverage**0.5


def text_magnitude_bm25_only(bm25: float, best: float, coverage: float) -> float:
    """Text magnitude from the bm25 share alone (bm25 already weighs how many terms matched)."""
    if best <= 0.0:
        return 0.0
    return scoring.TEXT_MAX * min(bm25 / best, 1.0)


# The variants of the last round; earlier rounds and their numbers are in README.md ("Tuning").
VARIANTS: dict[str, Variant] = {
    "shipped": Variant(),
    "dir hits weighted by specificity": Variant(recaller=DirSpecificRecaller),
    "TEXT_MAX 0.30": Variant({"TEXT_MAX": 0.30}),
    "PATH_TEXT_MAX 0.15": Variant({"PATH_TEXT_MAX": 0.15}),
    "specificity + TEXT_MAX 0.30": Variant({"TEXT_MAX": 0.30}, DirSpecificRecaller),
    "no evidence gate": Variant(require_evidence=False),
    "rules apply in their scope only": Variant(recaller=RuleScopeRecaller),
    "rule scope + TEXT_MAX 0.30": Variant({"TEXT_MAX": 0.30}, RuleScopeRecaller),
    "text magnitude x sqrt(coverage)": Variant({"text_magnitude": text_magnitude_sqrt_coverage}),
    "text magnitude from bm25 alone": Variant({"text_magnitude": text_magnitude_bm25_only}),
    "rule scope + sqrt(coverage)": Variant(
        {"text_magnitude": text_magnitude_sqrt_coverage}, RuleScopeRecaller
    ),
    "path magnitude x path-word coverage": Variant(recaller=PathCoverageRecaller),
    "text evidence: top 3 bm25 matches": Variant({"TEXT_EVIDENCE_TOP_RANK": 3}),
    "text evidence: top 10 bm25 matches": Variant({"TEXT_EVIDENCE_TOP_RANK": 10}),
    "rule scope + specificity": Variant(recaller=RuleScopeDirSpecificRecaller),
    "path words only for memories without a file hit": Variant(recaller=PathTiebreakRecaller),
    "path words weighted by rarity": Variant(recaller=PathRarityRecaller),
    # The static model's semantic gate (issue 17 §3; the default embedder is the static model).
    "static gate 0.30": Variant({"STATIC_SEM_GATE": 0.30}),
    "static gate 0.35": Variant({"STATIC_SEM_GATE": 0.35}),
    "static gate 0.40": Variant({"STATIC_SEM_GATE": 0.40}),
    "static gate 0.45": Variant({"STATIC_SEM_GATE": 0.45}),
    "static gate 0.50": Variant({"STATIC_SEM_GATE": 0.50}),
    "static gate 1.01 (no semantic evidence)": Variant({"STATIC_SEM_GATE": 1.01}),
}


def score(retriever: object, corpora: list[Corpus], window: str) -> dict[str, dict[str, float]]:
    """Recall@3 per mode, pooled ("all") and per repository, and memories injected on negatives."""
    out: dict[str, dict[str, float]] = {}
    for mode in ("prompt", "prompt+files"):
        recalls: dict[str, list[float]] = {"all": []}
        injected: list[float] = []
        for corpus in corpora:
            retriever.prepare(corpus)  # type: ignore[attr-defined]
            labels = load_labels(corpus, window)
            for task in corpus.tasks:
                if task.commit not in labels:
                    continue
                relevant = labels[task.commit]
                view = TaskView(task.query, task.files if mode == "prompt+files" else ())
                top = retriever.retrieve(view, mode)[:3]  # type: ignore[attr-defined]
                if relevant:
                    hit = len(set(top) & relevant) / len(relevant)
                    recalls["all"].append(hit)
                    recalls.setdefault(corpus.repo, []).append(hit)
                else:
                    injected.append(len(top))
        for key, values in recalls.items():
            out.setdefault(key, {})[mode] = statistics.fmean(values) if values else 0.0
        out["all"][f"inj {mode}"] = statistics.fmean(injected) if injected else 0.0
    return out


def row(label: str, r: dict[str, dict[str, float]], repos: list[str], per_repo: bool) -> str:
    cells = [label, f"{r['all']['prompt']:.3f}", f"{r['all']['prompt+files']:.3f}"]
    cells += [f"{r['all'].get('inj prompt', 0):.2f}", f"{r['all'].get('inj prompt+files', 0):.2f}"]
    if per_repo:
        cells += [f"{r[n]['prompt']:.3f} / {r[n]['prompt+files']:.3f}" for n in repos if n in r]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append")
    parser.add_argument("--window", default="dev", choices=("dev",))
    parser.add_argument("--variant", action="append", help="only these variants (default: all)")
    parser.add_argument("--per-repo", action="store_true", help="add a prompt / prompt+files cell per repo")
    args = parser.parse_args()
    names = args.repo or [spec.name for spec in REPOS]
    corpora = [load_corpus(name) for name in names]
    for corpus in corpora:
        attach(corpus)  # every system ranks the memories the product made
    chosen = {k: v for k, v in VARIANTS.items() if not args.variant or k in args.variant}
    shipped = {name: getattr(scoring, name) for v in VARIANTS.values() for name in v.constants}
    head = ["variant", "R@3 prompt", "R@3 prompt+files", "inj/neg prompt", "inj/neg prompt+files"]
    head += names if args.per_repo else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for baseline in (BM25Retriever(), ScopeBM25Retriever()):
        print(row(baseline.name, score(baseline, corpora, args.window), names, args.per_repo), flush=True)
    for label, variant in chosen.items():
        for name, value in shipped.items():
            setattr(scoring, name, value)
        for name, value in variant.constants.items():
            setattr(scoring, name, value)
        retriever = TetherRetriever(recaller=variant.recaller, require_evidence=variant.require_evidence)
        print(row(label, score(retriever, corpora, args.window), names, args.per_repo), flush=True)
    for name, value in shipped.items():
        setattr(scoring, name, value)


if __name__ == "__main__":
    main()
