"""Tune the edit-time (anchor) constants of recall on the gotcha evaluation's DEV window only.

Prepares tether once per repository (`gotcha_tether.prepared`), then scores each variant in edit mode
in-process: a variant sets constants of `tether.recall.scoring`. Prints pooled Recall@3 (all tasks and
the 25+ bucket) per variant, beside nearest-to-edit from the same run. Every run goes in GOTCHAS.md.

    python benchmarks/quality/gotchas_tune.py [--repo NAME]... [--variant NAME]... [--per-repo]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gotcha_tether
from gotchas_corpus import GOTCHA_REPOS, GotchaView, load
from gotchas_eval import BIG_POOL, NearestToEdit, Result, evaluate, pooled

from tether.anchors.resolve import FileView
from tether.recall import scoring

# Tuning shortcut (never in gotchas_run.py, whose numbers are reported): instead of writing the edited
# files into the work tree, `FileView.read` answers with the parent's text, and views (their parse and
# fingerprint windows) are kept across variants. Recall sees the same text either way.
_EDITING: dict[str, str] = {}
_VIEWS: dict[tuple[str, str], FileView] = {}
_READ = FileView.read


def _read(cls: type[FileView], root: Path, path: str) -> FileView:
    text = _EDITING.get(path)
    key = (path, text if text is not None else "@c1")
    if key not in _VIEWS:
        _VIEWS[key] = FileView(path, text) if text is not None else _READ(root, path)
    return _VIEWS[key]


@contextmanager
def _at_edit(self: gotcha_tether.Prepared, view: GotchaView) -> Iterator[None]:
    _EDITING.clear()
    for hunk in view.hunks if view.parent else ():
        text = self._parent_text(view.parent, hunk.path)
        if text is not None:
            _EDITING[hunk.path] = text
    try:
        yield
    finally:
        _EDITING.clear()


FileView.read = classmethod(_read)  # type: ignore[method-assign, assignment]
gotcha_tether.Prepared.at_edit = _at_edit  # type: ignore[method-assign, assignment]


@dataclass(frozen=True)
class Variant:
    constants: dict[str, object] = field(default_factory=dict)


def _variants() -> dict[str, Variant]:
    """This round's variants; earlier rounds and their numbers are in GOTCHAS.md ("Tuning")."""
    return {
        "shipped": Variant({}),
        "below x1.5": Variant({"ANCHOR_BELOW_FACTOR": 1.5}),
    }


VARIANTS = _variants()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", action="append")
    parser.add_argument("--variant", action="append", help=f"default: all of {', '.join(VARIANTS)}")
    parser.add_argument("--per-repo", action="store_true")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE: a one-off variant")
    args = parser.parse_args()
    names = args.repo or [s.name for s in GOTCHA_REPOS]
    variants = {n: VARIANTS[n] for n in args.variant} if args.variant else dict(VARIANTS)
    if args.set:
        variants = {" ".join(args.set): Variant({k: _value(v) for k, v in (s.split("=") for s in args.set)})}
    corpora = [load(name) for name in names]
    baseline: list[Result] = []
    for corpus in corpora:
        baseline.extend(evaluate(corpus, NearestToEdit(), "dev", ["edit"]))
    print(_line("nearest-to-edit", pooled(baseline), 0.0))
    defaults = {k: getattr(scoring, k) for v in variants.values() for k in v.constants}
    for name, variant in variants.items():
        for key, value in defaults.items():
            setattr(scoring, key, value)
        for key, value in variant.constants.items():
            setattr(scoring, key, value)
        started = time.perf_counter()
        results: list[Result] = []
        for corpus in corpora:
            results.extend(evaluate(corpus, gotcha_tether.TetherGotchas(modes=("edit",)), "dev", ["edit"]))
        print(_line(name, pooled(results), time.perf_counter() - started), flush=True)
        if args.per_repo:
            for r in results:
                print(
                    f"    {r.repo:<12} {r.bucket:<4} n={len(r.recall):<4} R@3 {statistics.fmean(r.recall or [0]):.3f}"
                )
    for key, value in defaults.items():
        setattr(scoring, key, value)
    gotcha_tether.close_all()
    return 0


def _value(text: str) -> object:
    return {"true": True, "false": False}.get(
        text.lower(), float(text) if text.replace(".", "").isdigit() else text
    )


def _line(name: str, rows: list[Result], seconds: float) -> str:
    by = {r.bucket: r for r in rows}
    big = f"{BIG_POOL}+"
    cells = [f"{statistics.fmean(by[b].recall or [0]):.3f}" for b in ("all", big)]
    return f"{name:<22} all {cells[0]}  {big} {cells[1]}  ({seconds:.0f}s)"


if __name__ == "__main__":
    sys.exit(main())
