"""Dump recall's full ranking for a fixed set of cases, to check that a speed-up changed no score.

    PYTHONHASHSEED=0 .venv/bin/python benchmarks/recall_identity.py dump before.json [--sizes 1000,10000]
    ... (change the code) ...
    PYTHONHASHSEED=0 .venv/bin/python benchmarks/recall_identity.py dump after.json
    .venv/bin/python benchmarks/recall_identity.py compare before.json after.json

For every case it writes what `Recaller.recall` returns (default limit and budget, and everything: limit
1000), `Recaller.search`, and the full ranking `_rank` makes: every candidate's score, multiplier, rank credit,
magnitudes and evidence, floats exact. The cases: 100 prompt and file sets (bench_core's probes; with two
files, `path:LINE`, no file, a directory with an edit's location) over bench_core's generated indexes, through
a one-shot store, a warm store, the warm store again (every cache filled), a warm store whose quiet moments
made ready what it reads ahead (`SQLiteStore.prepare`), and both again after another connection archived,
pinned, reworded, re-filed, removed and added memories; then 60 dev tasks of a gotcha corpus (`--gotchas`,
needs `benchmarks/quality/data`) in prompt+files and edit mode, one-shot and warm.

`--root` imports `src/` and `benchmarks/` of another checkout (the code before the change). The touched files
hold fixed code (`--code`, default this checkout's `src/tether` as it is when the dump starts: give the same
directory to both dumps) and the clock is fixed. Run both dumps with the same PYTHONHASHSEED: a few scores
sum floats over a set of words, whose order follows the string hash.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="write the rankings of every case to OUT")
    dump.add_argument("out", type=Path)
    dump.add_argument("--root", type=Path, default=HERE.parent, help="the checkout whose code is run")
    dump.add_argument("--code", type=Path, default=HERE.parent / "src" / "tether", help="the touched files")
    dump.add_argument("--sizes", default="1000,10000")
    dump.add_argument("--gotchas", default="tensorzero", help="gotcha corpora, comma-separated ('' for none)")
    dump.add_argument("--tasks", type=int, default=60)
    compare = sub.add_parser("compare", help="exit 1 unless two dumps are equal")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "compare":
        sys.exit(compare_dumps(args.before, args.after))
    sources = sorted(args.code.rglob("*.py"))
    texts = [p.read_text(encoding="utf-8") for p in sources]  # read now: the tree may change meanwhile
    sys.path[:0] = [
        str(args.root / "src"),
        str(args.root / "benchmarks"),
        str(args.root / "benchmarks" / "quality"),
    ]
    out: dict[str, list[dict[str, Any]]] = {}
    work = Path(tempfile.mkdtemp(prefix="recall_identity_"))
    try:
        dump_bench(out, work, [int(s) for s in args.sizes.split(",") if s], texts)
        for repo in (r for r in args.gotchas.split(",") if r):
            dump_gotchas(out, repo, args.tasks)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(json.dumps(out, sort_keys=True))
    print(f"{sum(len(v) for v in out.values())} cases written to {args.out}", file=sys.stderr)


def compare_dumps(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    if a.keys() != b.keys():
        print(f"different sets: {sorted(a)} and {sorted(b)}")
        return 1
    differing = 0
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            if x != y:
                differing += 1
                if differing <= 5:
                    print("differs:", key, x["prompt"], x["files"], [f for f in x if x[f] != y[f]])
    print(f"{sum(len(v) for v in a.values())} cases, {differing} differing")
    return 1 if differing else 0


def run_case(ws: Any, prompt: str, files: list[str], locations: Any = ()) -> dict[str, Any]:
    from tether.model.prompt import sanitize
    from tether.recall.evidence import CHANNELS

    r = ws.recaller()
    shown = r.recall(prompt, files, record=False, locations=locations)
    everything = r.recall(prompt, files, record=False, locations=locations, limit=1000, budget=10**9)
    touched, places = r.places(files, locations)
    ranked = r._rank(sanitize(prompt or ""), touched, None, CHANNELS, places=places)
    found = r.search(prompt, files=files, limit=20)
    return {
        "prompt": prompt,
        "files": files,
        "recall": [
            (x.memory.id, x.score, x.signals, x.receipt, x.rank, x.confidence) for x in shown.memories
        ],
        "candidates": shown.candidates,
        "full": [(x.memory.id, x.score, x.signals, x.receipt) for x in everything.memories],
        "ranked": [
            {
                "id": c.memory_id,
                "score": c.score,
                "multiplier": c.multiplier,
                "rrf": dict(c.rrf),
                "magnitude": asdict(c.magnitude),
                "evidence": asdict(c.evidence),
            }
            for c in ranked
        ],
        "search": [(x.memory.id, x.score, x.signals, x.receipt, x.confidence) for x in found],
    }


def bench_cases() -> list[tuple[str, list[str], list[Any]]]:
    import bench_core as bc

    from tether.anchors.locations import Location

    rng = random.Random(7)
    probes = bc.queries(100)
    cases: list[tuple[str, list[str], list[Any]]] = []
    for n, (prompt, path) in enumerate(probes):
        kind = n % 10
        if kind < 6:
            cases.append((prompt, [path], []))
        elif kind == 6:
            cases.append((prompt, [path, rng.choice(probes)[1]], []))
        elif kind == 7:
            cases.append((prompt, [f"{path}:{rng.randint(1, 200)}"], []))
        elif kind == 8:
            cases.append((prompt, [], []))
        else:
            edit = Location(path, lines=(10, 14), text="retry_count = 3")
            cases.append((prompt, [path.rsplit("/", 1)[0] + "/"], [edit]))
    return cases


def dump_bench(out: dict[str, list[dict[str, Any]]], work: Path, sizes: list[int], texts: list[str]) -> None:
    import bench_core as bc

    from tether.workspace import Workspace

    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["TETHER_HOME"] = str(home)
    items = bc.memory_texts(max(sizes))
    vectors = bc.embed_parallel([f"{s}\n{d}".strip() for s, d, _, _ in items])
    cases = bench_cases()
    for size in sizes:
        project = bc.make_project(work / f"p{size}", home)
        bc.build_index(project, items[:size], vectors[:size])
        for n, path in enumerate(bc.repo_files()):
            (project / path).write_text(texts[n % len(texts)], encoding="utf-8")
        for warm in (False, True):
            with Workspace.open(project, home=home, warm=warm, clock=lambda: NOW) as ws:
                out[f"bench{size}:{'warm' if warm else 'cold'}"] = [run_case(ws, *c) for c in cases]
                if warm:  # again: every cache filled
                    out[f"bench{size}:warm2"] = [run_case(ws, *c) for c in cases]
        with (
            Workspace.open(project, home=home, warm=True, clock=lambda: NOW) as ws,
            Workspace.open(project, home=home, warm=True, clock=lambda: NOW) as ready,
        ):
            prepare = getattr(ready.store, "prepare", None)  # what the resident's quiet moments make ready
            while prepare is not None and not prepare(0.05):
                pass
            out[f"bench{size}:ready"] = [run_case(ready, *c) for c in cases]
            out[f"bench{size}:warm3"] = [run_case(ws, *c) for c in cases]
            write_some(project, size)  # another connection's writes: kept caches must show them
            out[f"bench{size}:warm-after-writes"] = [run_case(ws, *c) for c in cases]
            while prepare is not None and not prepare(0.05):
                pass
            out[f"bench{size}:ready-after-writes"] = [run_case(ready, *c) for c in cases]
        print(f"bench {size} done", file=sys.stderr)


def write_some(project: Path, size: int) -> None:
    """Archive, pin, reword, re-file, remove and add a few memories, the same on every run."""
    from tether.model.memory import Memory
    from tether.store.sqlite.store import SQLiteStore

    store = SQLiteStore(project / ".tether" / "index.db")
    try:
        rng = random.Random(size)
        for n in rng.sample(range(size), 60):
            memory = store.get(f"{n:08x}")
            assert memory is not None
            kind = n % 6
            if kind == 0:
                store.put(memory.with_changes(status="archived"))
            elif kind == 1:
                store.put(memory.with_changes(pinned=not memory.pinned))
            elif kind == 2:
                store.put(memory.with_changes(summary=f"{memory.summary} retry cache upload"))
            elif kind == 3:
                store.put(memory.with_changes(files=("src/auth/views.py",)))
            elif kind == 4:
                store.remove(memory.id)
            else:
                store.put(memory.with_changes(priority="high"))
        for n in range(10):
            added = Memory(
                id=f"f{n:07x}",
                summary=f"Gotcha: the cache key in src/auth/views.py must stay stable ({n})",
                category="gotcha",
                files=("src/auth/views.py",),
                created=NOW,
                updated=NOW,
            )
            store.put(added)
    finally:
        store.close()


def dump_gotchas(out: dict[str, list[dict[str, Any]]], repo: str, tasks: int) -> None:
    from gotcha_tether import Prepared, places
    from gotchas_corpus import load, view_of

    from tether.workspace import Workspace

    corpus = load(repo)
    prep = Prepared(corpus)
    chosen = [t for t in corpus.tasks if t.split == "dev"][:tasks]
    try:
        for warm in (False, True):
            ws = prep.ws
            if warm:
                ws = Workspace.open(prep.repo, home=prep.tmp / "home", warm=True, clock=prep.ws.clock)
            rows = []
            for task in chosen:
                for mode in ("prompt+files", "edit"):
                    view = view_of(task, mode)
                    with prep.at_edit(view):
                        rows.append(run_case(ws, view.query, list(view.files), places(view.hunks)))
            out[f"gotchas-{repo}:{'warm' if warm else 'cold'}"] = rows
            if warm:
                ws.close()
    finally:
        prep.close()
    print(f"gotchas {repo} done", file=sys.stderr)


if __name__ == "__main__":
    main()
