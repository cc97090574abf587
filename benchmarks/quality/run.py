"""One command for the recall-quality evaluation: build (or reuse) the corpus, check it, score, print.

    python benchmarks/quality/run.py                       # dev window (the one to tune on), every repo
    python benchmarks/quality/run.py --window test         # held-out: once per set of constants
    python benchmarks/quality/run.py --judged              # add the hand-judged labels (dev window)
    python benchmarks/quality/run.py --online              # add the online replay (dev window)
    python benchmarks/quality/run.py --retriever mypkg.recall:make_retriever

Every run scores tether (or the --retriever systems) beside all baselines on the memories the product
made (`product.attach`), prints the main table, the strongest baseline per repository and mode with each
system's paired difference against it, the differences against every baseline, the tokens tether adds,
and recall at equal token budgets. Mirrors (bare git directories) are read from --mirrors, else
$TETHER_QUALITY_MIRRORS, else /work/.mirror.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build import build
from corpus import REPOS, Corpus, corpus_path, git_dir, load_corpus, mirror_root, repo_spec
from evaluate import (
    BASELINES,
    MODES,
    Labels,
    Retriever,
    Run,
    against_each,
    against_strongest,
    budget_table,
    evaluate,
    load_labels,
    markdown_table,
    pooled,
    score,
    token_table,
)
from product import attach, describe
from trap import run_trap

DEFAULT_RETRIEVERS = ("tether_retriever:tether",)


def _factory(spec: str) -> Callable[[], Retriever]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--retriever wants MODULE:CALLABLE, got {spec!r}")
    factory: Callable[[], Retriever] = getattr(importlib.import_module(module), attr)
    return factory


def _corpus(name: str, root: Path, rebuild: bool) -> Corpus | None:
    spec = repo_spec(name)
    fresh = corpus_path(spec.name).exists() and not rebuild
    if fresh:
        corpus = load_corpus(spec.name)
        fresh = (corpus.c1, corpus.c2) == (spec.c1, spec.c2)
    if not fresh:
        git_dir(spec, root)  # exits with a clear message when the mirror is missing
        if not build(spec, root, freeze=False):
            print(f"{spec.name}: the rebuilt corpus does not match the frozen labels; not scoring it")
            return None
    return load_corpus(spec.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--window", choices=("dev", "test"), default="dev", help="dev: tune (default); test: report, once"
    )
    parser.add_argument("--repo", action="append", help="repository short name (default: all)")
    parser.add_argument("--mode", action="append", choices=MODES, help="only this mode (default: both)")
    parser.add_argument("--mirrors", help="directory holding the fetched mirrors")
    parser.add_argument(
        "--retriever",
        action="append",
        default=[],
        help="MODULE:CALLABLE returning a Retriever (default: tether_retriever:tether)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="score only the --retriever systems")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus even if data/ has it")
    parser.add_argument(
        "--against",
        action="append",
        help="also print every other system's paired Recall@3 difference against this one (a --retriever's name)",
    )
    parser.add_argument("--judged", action="store_true", help="also score against the hand-judged labels")
    parser.add_argument("--online", action="store_true", help="also replay the dev tasks with feedback")
    parser.add_argument("--no-trap", action="store_true", help="skip the trap scenario at the end")
    args = parser.parse_args(argv)
    if args.window == "test" and (args.judged or args.online):
        raise SystemExit("--judged and --online are dev-window measurements; run them with --window dev")

    started = time.perf_counter()
    names = args.repo or [spec.name for spec in REPOS]
    modes = tuple(args.mode or MODES)
    baselines = [] if args.no_baselines else list(BASELINES)
    retrievers = [_factory(s) for s in (args.retriever or DEFAULT_RETRIEVERS)]
    root = mirror_root(args.mirrors)
    runs: list[Run] = []
    labels: Labels = {}
    corpora: list[Corpus] = []
    systems: list[str] = []
    print(f"window {args.window}; repositories {', '.join(names)}\n")
    for name in names:
        corpus = _corpus(name, root, args.rebuild)
        if corpus is None:
            return 1
        t0 = time.perf_counter()
        project = attach(corpus)
        facts = describe(project)
        print(
            f"{name}: {facts['units']} rule units -> {facts['memories']} product memories "
            f"(skipped by the sync: {facts['skipped']}, units with no memory: {facts['unmapped']}, "
            f"units sharing a memory with another: {facts['merged']}, memories no unit maps to: "
            f"{facts['unitless']}); project made in "
            f"{time.perf_counter() - t0:.0f} s"
        )
        for warning in project.skipped:
            print(f"  skipped: {warning}")
        corpora.append(corpus)
        labels.update(load_labels(corpus, args.window))
        t0 = time.perf_counter()
        for make in [BASELINES[b] for b in baselines] + retrievers:
            retriever = make()
            runs.extend(evaluate(corpus, retriever, args.window, modes))
            if retriever.name not in baselines and retriever.name not in systems:
                systems.append(retriever.name)
        print(f"  scored in {time.perf_counter() - t0:.0f} s")
    if len(names) > 1:
        runs.extend(pooled(runs))
    results = [score(r, labels) for r in runs]
    print()
    print(markdown_table(results, args.window))
    if baselines and systems:
        print()
        print(against_strongest(results, baselines, systems))
        print()
        print(against_each(results, baselines, systems, "all" if len(names) > 1 else names[0]))
    for name in args.against or ():
        others = [s for s in systems if s != name]
        for repo in ["all", *names] if len(names) > 1 else names:
            print()
            print(against_each(results, [name], others, repo))
    print()
    print(token_table([r for r in runs if r.repo == ("all" if len(names) > 1 else names[0])], systems))
    print()
    print(budget_table([r for r in runs if r.repo == ("all" if len(names) > 1 else names[0])], labels))
    if args.judged:
        from judged import judged_report

        print()
        print(judged_report(runs, labels, corpora, baselines, systems))
    if args.online:
        from online import online_report

        t0 = time.perf_counter()
        print()
        print(online_report(corpora, modes))
        print(f"\n(online replay: {time.perf_counter() - t0:.0f} s)")
    code = 0
    if not args.no_trap:
        passed, why = run_trap()
        print(f"\ntrap: {'PASS' if passed else 'FAIL'} ({why})")
        code = 0 if passed else 1
    print(f"\nwall time: {time.perf_counter() - started:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
