"""One command for the file-tied (gotcha) evaluation: build or reuse the corpus, check it, score, print.

    python benchmarks/quality/gotchas_run.py                        # dev window (the one to tune on)
    python benchmarks/quality/gotchas_run.py --window test          # held out: run once per change, report
    python benchmarks/quality/gotchas_run.py --repo tailscale --mode edit
    python benchmarks/quality/gotchas_run.py --retriever mymodule:factory --no-baselines

Systems: the baselines of `gotchas_eval` and tether as shipped (`gotcha_tether:tether`) with the
before-edit hook's listing (`gotcha_tether:before_edit`). Mirrors (bare git directories) are read from
--mirrors, else $TETHER_QUALITY_MIRRORS, else /work/.mirror. GOTCHAS.md has the rules and the results.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import git_dir, mirror_root
from gotchas_build import build, compare, labels_document
from gotchas_corpus import GOTCHA_REPOS, MODES, corpus_file, gotcha_spec, labels_file, load
from gotchas_eval import (
    BASELINES,
    BUCKETS,
    GotchaRetriever,
    Result,
    evaluate,
    glance,
    markdown_table,
    paired,
    pooled,
    strongest,
)

DEFAULT_SYSTEMS = (
    "gotcha_tether:tether",
    "gotcha_tether:tether_without_recent",
    "gotcha_tether:tether_files",
    "gotcha_tether:before_edit",
    "gotcha_tether:before_edit_file",
    "gotcha_tether:after_read",
    "gotcha_tether:after_read_age",
)


def _factory(spec: str) -> Callable[[], GotchaRetriever]:
    if spec in BASELINES:
        return BASELINES[spec]
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"--retriever wants MODULE:CALLABLE or a baseline name, got {spec!r}")
    factory: Callable[[], GotchaRetriever] = getattr(importlib.import_module(module), attr)
    return factory


def ready(name: str, mirrors: Path, rebuild: bool) -> bool:
    """Make sure data/ holds this repository's corpus and that it matches the frozen labels."""
    spec = gotcha_spec(name)
    if not labels_file(name).exists():
        print(f"{name}: no frozen labels at {labels_file(name)}; run gotchas_build.py --freeze first")
        return False
    fresh = corpus_file(name).exists() and not rebuild
    if fresh:
        corpus = load(name)
        fresh = (corpus.c1, corpus.c2, corpus.end) == (spec.c1, spec.c2, spec.end)
    if not fresh:
        git_dir(spec, mirrors)  # exits with a clear message when the mirror is missing
        print(f"{name}: building the corpus from the mirror (about a minute)")
        return build(spec, mirrors, freeze=False)
    frozen = json.loads(labels_file(name).read_text(encoding="utf-8"))
    diffs = compare(frozen, labels_document(load(name)))
    if diffs:
        print(
            f"{name}: the corpus in data/ does not match the frozen labels ({len(diffs)} differences), e.g."
        )
        for d in diffs[:10]:
            print(f"    {d}")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--window",
        choices=("dev", "test", "all"),
        default="dev",
        help="dev: tune; test: report; all: both, for a repository never tuned on (--repo pydantic-ai)",
    )
    parser.add_argument("--repo", action="append", help="repository short name (default: all five)")
    parser.add_argument("--mode", action="append", choices=MODES, help="mode (default: all three)")
    parser.add_argument("--mirrors", help="directory holding the fetched mirrors")
    parser.add_argument(
        "--retriever",
        action="append",
        default=[],
        help="MODULE:CALLABLE returning a retriever, or a baseline name (default: tether and its hook)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="score only the --retriever systems")
    parser.add_argument("--against", action="append", help="baselines for the paired differences")
    parser.add_argument(
        "--main",
        action="append",
        help="the systems whose paired differences are printed (a --retriever's name; default: tether)",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus even if data/ has it")
    parser.add_argument("--out", help="also write the tables to this markdown file")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    names = args.repo or [s.name for s in GOTCHA_REPOS]
    modes = args.mode or list(MODES)
    systems = list(args.retriever or DEFAULT_SYSTEMS)
    factories = ([] if args.no_baselines else list(BASELINES.values())) + [_factory(s) for s in systems]
    root = mirror_root(args.mirrors)
    results: list[Result] = []
    timing = []
    for name in names:
        if not ready(name, root, args.rebuild):
            print(f"{name}: not scoring it")
            return 1
        corpus = load(name)
        repo_started = time.perf_counter()
        for make in factories:
            results.extend(evaluate(corpus, make(), args.window, modes))
        timing.append(f"{name} {time.perf_counter() - repo_started:.0f}s")
    adapter = sys.modules.get("gotcha_tether")
    if adapter is not None:
        adapter.close_all()  # the temporary checkouts and workspaces
    if len(names) > 1:
        results = pooled(results) + results
    repo_order = {name: i for i, name in enumerate(["all", *names])}
    order = {b: i for i, b in enumerate(BUCKETS)}
    results.sort(key=lambda r: (repo_order[r.repo], order[r.bucket], MODES.index(r.mode)))
    title = (
        f"Window **{args.window}**; quality over tasks with at least one relevant memory (n), "
        "95% bootstrap intervals; `inj/neg`: memories in the first three on tasks with none relevant; "
        "`shown`: memories returned (all tasks)."
    )
    parts = [glance(results), markdown_table(results, title)]
    main_system = next(
        (r.system for r in results if r.system == "tether"), results[0].system if results else ""
    )
    best = {mode: strongest(results, mode) for mode in modes}
    if args.against:
        against = [(b, modes) for b in args.against]
    else:
        # The strongest baseline of each mode in that mode, then the two this evaluation is about.
        against = [(b, [m]) for m, b in best.items() if b]
        for b in ("bm25:files", "nearest-to-edit"):
            rest = [m for m in modes if best.get(m) != b]
            if rest:
                against.append((b, rest))
    for system in args.main or [main_system]:
        parts.append(paired(results, system, against))
    parts.append(f"Strongest baseline by pooled Recall@3, all tasks: {best}.")
    elapsed = time.perf_counter() - started
    parts.append(f"Run time: {elapsed:.0f}s ({', '.join(timing)}).")
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
