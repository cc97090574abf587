"""Offline re-ranking of tether's first candidates on the file-tied evaluation: try an ordering idea in seconds.

    # 1. dump tether's first 30 candidates per task (prompt+files, dev), with their magnitudes and anchors:
    TETHER_DUMP=/tmp/dump.jsonl python benchmarks/quality/gotchas_run.py --mode prompt+files \\
        --no-baselines --retriever gotchas_rerank:dumper
    # 2. score re-rankings of that dump against tether's own order, with paired intervals:
    python benchmarks/quality/gotchas_rerank.py /tmp/dump.jsonl [--window dev] [--variant NAME ...]

The dump is the ranking before its last step (`Recaller._rank`, before `places.beside_first`): its first three
candidates with evidence are what `tether recall` injected before session 12, and `beside:0.2` gives what it
injects now, so a variant's difference is the idea's alone. Variants re-sort the candidates with evidence (the
ones injection may pick) by their score plus a bonus; each is named `KIND:WEIGHT`:

- `beside:W`: keep the first, favour the next 11 anchored near it in the same file (`W / (1 + lines / 6)`), as
  `places.beside_first` does in the product;
- `density:W`: every candidate by the score of the others anchored near it (`W * sum(score_j / best /
  (1 + lines / 6))`), a cluster's mass rather than the first pick's;
- `file:W`: the candidates of the touched file whose best place-word match is strongest (`W * best / top`);
- `named:W`: the candidates of a file whose directory or name the prompt names;
- `spread:N`: at most N of the first three from one touched file (session 14).

Only ever on the dev window: the test window is read by `gotchas_run.py --window test`, once per release.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gotcha_tether import TetherGotchas
from gotchas_corpus import GotchaView

HERE = Path(__file__).resolve().parent
DEPTH = 30  # candidates dumped per task
Row = dict[str, Any]
Task = dict[str, Any]


class Dumper(TetherGotchas):
    """tether's ranking before `beside_first`, writing each task's first `DEPTH` candidates to $TETHER_DUMP."""

    def __init__(self) -> None:
        super().__init__("tether-dump", modes=("prompt+files",))
        self.out = Path(os.environ.get("TETHER_DUMP", "gotchas-dump.jsonl"))

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        from tether.anchors.resolve import FileView, resolve
        from tether.model.prompt import sanitize
        from tether.recall.evidence import CHANNELS

        prep = self.prep
        assert prep is not None
        rows: list[Row] = []
        with prep.at_edit(view):
            recaller = prep.ws.recaller()
            touched, places = recaller.places(list(view.files))
            views: dict[str, FileView] = {}
            for n, c in enumerate(
                recaller._rank(sanitize(view.query), touched, None, CHANNELS, places=places)
            ):
                if n >= DEPTH:
                    break
                members = []
                for corpus_id, path, line, anchor in prep.members.get(c.memory_id, []):
                    now, how = None, None
                    if anchor is not None and path in view.files:
                        views.setdefault(path, FileView.read(prep.repo, path))
                        found = resolve(anchor, views[path])
                        lost = found.anchor.lost or found.anchor.lines is None
                        now, how = (None if lost else list(found.anchor.lines or ())), found.how
                    members.append([corpus_id, path, line, now, how])
                magnitudes = {
                    f.name: v for f in dataclasses.fields(c.magnitude) if (v := getattr(c.magnitude, f.name))
                }
                rows.append(
                    {
                        "id": c.memory_id,
                        "score": c.score,
                        "relevant": c.relevant,
                        "mag": magnitudes,
                        "members": members,
                    }
                )
        task = {
            "repo": prep.corpus.repo,
            "query": view.query,
            "files": list(view.files),
            "parent": view.parent,
        }
        with self.out.open("a", encoding="utf-8") as f:
            f.write(json.dumps({**task, "rows": rows}) + "\n")
        return prep.corpus_ids([r["id"] for r in rows if r["relevant"]], view.files)


def dumper() -> Dumper:
    return Dumper()


def load(dump: Path, window: str) -> list[Task]:
    """The dumped tasks of `window` that have a positive, with their labels (corpus ids) and pool size."""
    tasks: list[Task] = []
    dumped = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines() if line.strip()]
    for repo in sorted({d["repo"] for d in dumped}):
        corpus = json.loads((HERE / "data" / "gotchas" / repo / "corpus.json").read_text(encoding="utf-8"))
        labels = json.loads((HERE / "labels" / "gotchas" / f"{repo}.json").read_text(encoding="utf-8"))
        by_commit = {t["commit"]: t for t in labels["tasks"]}
        commit_of = {(t["query"], tuple(t["files"]), t["parent"]): t["commit"] for t in corpus["tasks"]}
        for d in dumped:
            label = by_commit.get(commit_of.get((d["query"], tuple(d["files"]), d["parent"]), ""))
            if d["repo"] == repo and label and label["split"] == window and label["relevant"]:
                relevant = {r[2] for r in label["relevant"]}
                tasks.append({**d, "pool": label["pool"], "relevant": relevant})
    return tasks


def corpus_ids(rows: Sequence[Row], files: Sequence[str]) -> list[str]:
    """As `Prepared.corpus_ids`: a memory on several comments counts as its comment on a touched file."""
    out: dict[str, None] = {}
    for r in rows:
        on = [m for m in r["members"] if m[1] in files] or r["members"]
        if on:
            out.setdefault(on[0][0], None)
    return list(out)


Variant = Callable[[Task], list[Row]]


def shipped(task: Task) -> list[Row]:
    return [r for r in task["rows"] if r["relevant"]]


def _spans(r: Row, files: Sequence[str]) -> list[tuple[str, list[int]]]:
    return [(m[1], m[3]) for m in r["members"] if m[1] in files and m[3] and m[4] != "widened"]


def _apart(a: list[int], b: list[int]) -> int:
    return max(0, max(a[0], b[0]) - min(a[1], b[1]))


def beside(weight: float, depth: int = 12, scale: float = 6.0) -> Variant:
    def run(task: Task) -> list[Row]:
        rows = shipped(task)
        if not rows:
            return rows
        first = _spans(rows[0], task["files"])

        def key(r: Row) -> float:
            near = [_apart(s, f) for p, s in _spans(r, task["files"]) for q, f in first if p == q]
            return float(r["score"]) + (weight / (1 + min(near) / scale) if near else 0.0)

        return [rows[0], *sorted(rows[1:depth], key=key, reverse=True), *rows[depth:]]

    return run


def density(weight: float, scale: float = 6.0) -> Variant:
    def run(task: Task) -> list[Row]:
        rows = shipped(task)
        spans = [_spans(r, task["files"]) for r in rows]
        top = max((r["score"] for r in rows), default=1.0) or 1.0

        def mass(i: int) -> float:
            return sum(
                rows[j]["score"] / top / (1 + _apart(s, t) / scale)
                for j in range(len(rows))
                if j != i
                for p, s in spans[i]
                for q, t in spans[j]
                if p == q
            )

        bonus = [weight * mass(i) for i in range(len(rows))]
        return [r for _, r in sorted(zip(bonus, rows, strict=True), key=lambda x: -(x[1]["score"] + x[0]))]

    return run


def _file(r: Row, files: Sequence[str]) -> str | None:
    return next((m[1] for m in r["members"] if m[1] in files), None)


def by_file(weight: float) -> Variant:
    def run(task: Task) -> list[Row]:
        rows = shipped(task)
        best: dict[str, float] = defaultdict(float)
        for r in rows:
            path = _file(r, task["files"])
            if path:
                best[path] = max(best[path], r["mag"].get("place", 0.0))
        top = max(best.values(), default=0.0) or 1.0
        return sorted(
            rows, key=lambda r: -(r["score"] + weight * best.get(_file(r, task["files"]) or "", 0.0) / top)
        )

    return run


_WORD = re.compile(r"[a-z0-9]+")
_PATH_NOISE = frozenset(
    "src lib app pkg internal packages index main mod init test tests go rs ts tsx py js".split()
)


def named(weight: float) -> Variant:
    def run(task: Task) -> list[Row]:
        asked = {w for w in _WORD.findall(task["query"].lower()) if len(w) >= 3}

        def bonus(r: Row) -> float:
            path = _file(r, task["files"])
            if not path:
                return 0.0
            parts = path.lower().split("/")
            words = {w for p in [*parts[-3:-1], parts[-1].rsplit(".", 1)[0]] for w in _WORD.findall(p)}
            return weight if (words - _PATH_NOISE) & asked else 0.0

        return sorted(shipped(task), key=lambda r: -(r["score"] + bonus(r)))

    return run


def spread(most: float) -> Variant:
    """At most `most` of the first three from one touched file (the next best of another file moves up)."""

    def run(task: Task) -> list[Row]:
        rows = shipped(task)
        head: list[Row] = []
        held: list[Row] = []
        count: dict[str, int] = defaultdict(int)
        for r in rows:
            path = _file(r, task["files"]) or ""
            if len(head) < 3 and count[path] >= most:
                held.append(r)
                continue
            count[path] += 1
            (head if len(head) < 3 else held).append(r)
        return head + held

    return run


KINDS: dict[str, Callable[[float], Variant]] = {
    "beside": beside,
    "density": density,
    "file": by_file,
    "named": named,
    "spread": spread,
}


def recall_at_3(tasks: Sequence[Task], variant: Variant) -> list[float]:
    out = []
    for t in tasks:
        top = corpus_ids(variant(t), t["files"])[:3]
        out.append(len(set(top) & t["relevant"]) / len(t["relevant"]))
    return out


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def interval(diffs: Sequence[float], rounds: int = 2000, seed: int = 1) -> tuple[float, float]:
    """95% paired bootstrap interval of the mean difference."""
    rng = random.Random(seed)
    means = sorted(_mean([diffs[rng.randrange(len(diffs))] for _ in diffs]) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds)]


def report(tasks: Sequence[Task], name: str, variant: Variant, base: list[float]) -> str:
    got = recall_at_3(tasks, variant)
    big = [i for i, t in enumerate(tasks) if t["pool"] >= 25]
    diffs = [a - b for a, b in zip(got, base, strict=True)]
    lo, hi = interval(diffs)
    per: dict[str, list[float]] = defaultdict(list)
    for t, d in zip(tasks, diffs, strict=True):
        per[t["repo"]].append(d)
    repos = " ".join(f"{repo} {_mean(d):+.3f}" for repo, d in sorted(per.items()))
    return (
        f"| {name} | {_mean(got):.3f} | {_mean([got[i] for i in big]):.3f} | {_mean(diffs):+.3f} [{lo:+.2f}, "
        f"{hi:+.2f}] | {_mean([diffs[i] for i in big]):+.3f} | {repos} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dump", type=Path, help="a dump made by `--retriever gotchas_rerank:dumper`")
    parser.add_argument("--window", default="dev", choices=("dev",), help="dev only: tune on nothing else")
    parser.add_argument("--variant", action="append", help="KIND:WEIGHT, e.g. beside:0.2 (default: a sweep)")
    args = parser.parse_args(argv)
    tasks = load(args.dump, args.window)
    if not tasks:
        raise SystemExit(f"{args.dump}: no dumped {args.window} task with a positive")
    base = recall_at_3(tasks, shipped)
    specs = args.variant or [f"{k}:{w}" for k in KINDS for w in (0.05, 0.1, 0.2)]
    print(f"{len(tasks)} tasks with a positive; as dumped: {_mean(base):.3f}\n")
    print("| variant | Recall@3 | 25+ | against the dump's order | 25+ | per repository |")
    print("|---|---:|---:|---|---:|---|")
    for spec in specs:
        kind, _, weight = spec.partition(":")
        if kind not in KINDS or not weight:
            raise SystemExit(f"--variant wants KIND:WEIGHT with KIND one of {', '.join(KINDS)}, got {spec!r}")
        print(report(tasks, spec, KINDS[kind](float(weight)), base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
