"""Score ranking variants on the dev window of both evaluations at once, in process (issue 17's rounds).

    .venv/bin/python benchmarks/quality/tune_both.py '{"name": {"CONSTANT": value, ...}, ...}' [--baselines]

A variant sets constants of `tether.recall.scoring` (each restored before the next). Each line prints the
rule evaluation's pooled Recall@3 prompt-only (P) and with files (F), per repository (P/F), and the file-tied
gotcha evaluation's Recall@3 with files, pooled, in the 25+ bucket and per repository. `--baselines` also
prints the strongest simple baselines of each (scope-bm25, porter BM25; BM25 over the touched files'
memories). Dev window only: the held-out windows are run by `run.py --window test` and
`gotchas_run.py --window test`, once per set of constants.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gotcha_tether
from corpus import REPOS, TaskView, load_corpus
from evaluate import BM25Retriever, Retriever, ScopeBM25Retriever, load_labels
from gotchas_corpus import GOTCHA_REPOS
from gotchas_corpus import load as load_gotchas
from gotchas_eval import BASELINES as GOTCHA_BASELINES
from gotchas_eval import evaluate as evaluate_gotchas
from product import attach
from tether_retriever import TetherRetriever

from tether.recall import scoring

MODES = ("prompt", "prompt+files")


def rules(retriever: Retriever, corpora: list) -> dict[str, dict[str, float]]:  # type: ignore[type-arg]
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        per: dict[str, list[float]] = {"all": []}
        for corpus in corpora:
            retriever.prepare(corpus)
            labels = load_labels(corpus, "dev")
            for task in corpus.tasks:
                relevant = labels.get(task.commit)
                if not relevant:
                    continue
                view = TaskView(task.query, task.files if mode == "prompt+files" else ())
                top = retriever.retrieve(view, mode)[:3]
                hit = len(set(top) & relevant) / len(relevant)
                per["all"].append(hit)
                per.setdefault(corpus.repo, []).append(hit)
        out[mode] = {name: statistics.fmean(values) for name, values in per.items()}
    return out


def gotchas(retriever: object, corpora: list) -> dict[str, float]:  # type: ignore[type-arg]
    per: dict[str, list[float]] = {}
    for corpus in corpora:
        for result in evaluate_gotchas(corpus, retriever, "dev", ["prompt+files"]):
            per.setdefault(result.bucket, []).extend(result.recall)
            if result.bucket == "all":
                per[corpus.repo] = result.recall
    return {name: statistics.fmean(values) for name, values in per.items()}


def line(r: dict[str, dict[str, float]], g: dict[str, float]) -> str:
    p, f = r["prompt"], r["prompt+files"]
    repos = " ".join(f"{s.name[:4]}:{p[s.name]:.3f}/{f[s.name]:.3f}" for s in REPOS)
    grepos = " ".join(f"{s.name[:4]}:{g[s.name]:.3f}" for s in GOTCHA_REPOS)
    return (
        f"rules P {p['all']:.3f} F {f['all']:.3f} | {repos}\n"
        f"    gotchas all {g['all']:.3f} 25+ {g['25+']:.3f} | {grepos}"
    )


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    variants: dict[str, dict[str, object]] = json.loads(args[0]) if args else {"shipped": {}}
    rule_corpora = [load_corpus(s.name) for s in REPOS]
    for corpus in rule_corpora:
        attach(corpus)
    gotcha_corpora = [load_gotchas(s.name) for s in GOTCHA_REPOS]
    if "--baselines" in argv:
        print("scope-bm25 F:", round(rules(ScopeBM25Retriever(), rule_corpora)["prompt+files"]["all"], 3))
        print("bm25-porter P:", round(rules(BM25Retriever(), rule_corpora)["prompt"]["all"], 3))
        print("bm25:files gotchas:", gotchas(GOTCHA_BASELINES["bm25:files"](), gotcha_corpora))
    shipped = {key: getattr(scoring, key) for consts in variants.values() for key in consts}
    for name, consts in variants.items():
        for key, value in {**shipped, **consts}.items():
            setattr(scoring, key, value)
        r = rules(TetherRetriever(), rule_corpora)
        print(f"{name}: {line(r, gotchas(gotcha_tether.TetherGotchas(), gotcha_corpora))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
