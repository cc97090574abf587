"""One command for the recall-quality evaluation: build (or reuse) the corpus, check it, score, print.

    python benchmarks/quality/run.py                       # test window, every repo, the baselines
    python benchmarks/quality/run.py --window dev          # the tuning window
    python benchmarks/quality/run.py --retriever mypkg.recall:make_retriever

Mirrors (bare git directories) are read from --mirrors, else $TETHER_QUALITY_MIRRORS, else /work/.mirror.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build import build
from corpus import REPOS, corpus_path, git_dir, load_corpus, mirror_root, repo_spec
from evaluate import BASELINES, Result, Retriever, evaluate, markdown_table, paired_differences, pooled
from trap import run_trap


def _factory(spec: str) -> Callable[[], Retriever]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--retriever wants MODULE:CALLABLE, got {spec!r}")
    factory: Callable[[], Retriever] = getattr(importlib.import_module(module), attr)
    return factory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--window", choices=("test", "dev"), default="test", help="test: report; dev: tune")
    parser.add_argument("--repo", action="append", help="repository short name (default: all)")
    parser.add_argument("--mirrors", help="directory holding the fetched mirrors")
    parser.add_argument(
        "--retriever", action="append", default=[], help="MODULE:CALLABLE returning a Retriever"
    )
    parser.add_argument("--no-baselines", action="store_true", help="score only the --retriever systems")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus even if data/ has it")
    parser.add_argument(
        "--against", default="bm25", help="system the paired Recall@3 differences are taken against (bm25)"
    )
    args = parser.parse_args(argv)

    specs = [repo_spec(n) for n in args.repo] if args.repo else list(REPOS)
    factories: list[Callable[[], Retriever]] = [] if args.no_baselines else list(BASELINES.values())
    factories += [_factory(s) for s in args.retriever]
    root = mirror_root(args.mirrors)
    results: list[Result] = []
    for spec in specs:
        fresh = corpus_path(spec.name).exists() and not args.rebuild
        if fresh:
            corpus = load_corpus(spec.name)
            fresh = (corpus.c1, corpus.c2) == (spec.c1, spec.c2)
        if not fresh:
            git_dir(spec, root)  # exits with a clear message when the mirror is missing
            if not build(spec, root, freeze=False):
                print(f"{spec.name}: the rebuilt corpus does not match the frozen labels; not scoring it")
                return 1
        corpus = load_corpus(spec.name)
        for make in factories:
            results.extend(evaluate(corpus, make(), args.window))
    if len(specs) > 1:
        results.extend(pooled(results))
    print()
    print(markdown_table(results, args.window))
    if any(r.system == args.against for r in results):
        print()
        print(paired_differences(results, baseline=args.against))
    passed, why = run_trap()
    print(f"\ntrap: {'PASS' if passed else 'FAIL'} ({why})")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
