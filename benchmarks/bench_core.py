"""Benchmark tether's core against baselines measured in the same run, and print the ratios.

    .venv/bin/python benchmarks/bench_core.py [--quick] [--sizes 1000,10000,100000] [--adds 300]
    .venv/bin/python benchmarks/bench_core.py --sizes 10000 --against ../main/src [--rounds 2]

1. add throughput: memories/s through `Workspace.add` (validation, secret scan, lock, duplicate check,
   atomic note write, embed, index) beside writing the same rendered notes with `notes.write_atomic` alone;
2. search latency p50/p95 (`Workspace.search`, the full fusion) at each size, beside a bare FTS5 MATCH
   over the same index;
3. recall latency p50/p95 in-process (`Recaller.recall(prompt, [file], record=False)`) at each size, the
   touched files on disk holding real code (tether's own modules), so the code channel reads them; beside
   it, interleaved, the same recall without the code channel (`code x`: its cost as a ratio), and the same
   recall from a warm store (`Workspace.open(warm=True)`, as the resident process and the MCP server
   open it: each term's postings kept between queries) as a ratio to a bare FTS5 MATCH timed beside each
   one, and from a warm store whose quiet moments made ready what it reads ahead (`SQLiteStore.prepare`
   run to the end, as the resident's idle time does: every active memory, every path's owners, the common
   words' postings; `prep s` is how long that took), each beside its own MATCH, in wall time and in CPU
   time (`cpu ms`, `cpu x` per pair, `sum x` over all probes: this process's own work, which the load of
   a shared machine inflates much less); then how each cost grows with the index (the exponent b of cost
   ~ n^b);
4. cold `tether search` and `tether recall` process times beside `python -c "import sqlite3"`.

`--against SRC` measures 2 and 3 only, for this checkout and for another one's `src` (the code before a
change), each in its own process on the same index, the order alternating over `--rounds`, and prints each
round's row and the ratios of this side to the other per round.

The indexes are built fast by writing generated memories straight through `SQLiteStore.put` with the
hashed embedder (vectors computed once for the largest size, in parallel); no notes are written for them.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

# `--against SRC` runs another checkout's `src` in child processes (the code before a change, on the same
# indexes and probes): `TETHER_BENCH_SRC` says which one a process imports.
sys.path.insert(0, os.environ.get("TETHER_BENCH_SRC") or str(Path(__file__).resolve().parents[1] / "src"))

from tether.embed import HashedEmbedder
from tether.fs import write_atomic
from tether.model.memory import Memory, new_id
from tether.notes import format as notes
from tether.project import init_project
from tether.recall.evidence import CHANNELS
from tether.store.sqlite.store import SQLiteStore
from tether.workspace import Workspace

TETHER = Path(sys.executable).with_name("tether")

# -- realistic memory texts ---------------------------------------------------------------------------

AREAS = [
    "auth",
    "billing",
    "upload",
    "search",
    "cache",
    "queue",
    "api",
    "db",
    "ui",
    "deploy",
    "metrics",
    "mail",
]
MODULES = ["client", "server", "models", "views", "handlers", "utils", "config", "tasks", "schema", "routes"]
THINGS = [
    "retry limit",
    "timeout",
    "connection pool",
    "session token",
    "rate limiter",
    "migration order",
    "feature flag",
    "cron schedule",
    "error message",
    "log level",
    "batch size",
    "cache key",
    "webhook",
    "index",
    "lock",
    "transaction",
    "fixture",
    "snapshot test",
    "env var",
    "port",
    "TLS certificate",
]
VERBS = ["must stay", "should be", "is set to", "breaks when changed from", "was raised to", "defaults to"]
VALUES = ["30s", "5", "off", "utf-8", "6443", "100", "strict", "lazy", "per request", "UTC", "3 retries"]
REASONS = [
    "the CDN returns 503 during deploys",
    "Postgres holds the advisory lock across the request",
    "the mobile client caches the old schema for a week",
    "CI runs the suite on two cores only",
    "the vendor SDK is not thread-safe",
    "tokens expire hourly and refresh races the first call",
    "the staging load balancer terminates TLS",
    "we shard by tenant id, not by user id",
]
TEMPLATES = [
    "The {thing} in {path} {verb} {value}",
    "Never change the {thing} of {area} {module} without updating {path}",
    "{Area} {module}: {thing} {verb} {value} because {reason}",
    "Prefer {area}_{module} helpers over raw SQL for the {thing}",
    "Decision: {area} uses one {thing} per tenant ({value})",
    "Gotcha: {thing} in {area} {verb} {value} — {reason}",
    "Run `make {area}-{module}` before touching the {thing}",
    "{Area}: the {thing} lives in {path}, not in settings",
]
CATEGORIES = ("pref", "decision", "gotcha", "context")


def repo_files() -> list[str]:
    return [f"src/{area}/{module}.py" for area in AREAS for module in MODULES]


def memory_texts(count: int, seed: int = 11) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(summary, details, category, files) for `count` varied memories."""
    rng = random.Random(seed)
    files = repo_files()
    out = []
    for i in range(count):
        area, module = rng.choice(AREAS), rng.choice(MODULES)
        path = f"src/{area}/{module}.py"
        summary = (
            rng.choice(TEMPLATES).format(
                thing=rng.choice(THINGS),
                path=path,
                verb=rng.choice(VERBS),
                value=rng.choice(VALUES),
                area=area,
                Area=area.capitalize(),
                module=module,
                reason=rng.choice(REASONS),
            )[:150]
            + f" (#{i})"
        )
        details = ""
        if rng.random() < 0.6:
            details = f"Why: {rng.choice(REASONS)}. Seen in {rng.choice(files)} and {rng.choice(files)}."
        refs: tuple[str, ...] = ()
        roll = rng.random()
        if roll < 0.6:
            refs = (path,)
        elif roll < 0.75:
            refs = (f"src/{area}/",)
        elif roll < 0.85:
            refs = (path, rng.choice(files))
        out.append((summary, details, CATEGORIES[i % 4], refs))
    return out


def queries(count: int, seed: int = 5) -> list[tuple[str, str]]:
    """(prompt, touched file) pairs an agent might produce."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        area, module, thing = rng.choice(AREAS), rng.choice(MODULES), rng.choice(THINGS)
        prompt = rng.choice(
            [
                f"why does the {thing} in {area} keep failing?",
                f"change the {thing} for {area} {module}",
                f"fix the flaky {area} test around the {thing}",
                f"{thing} {area}",
            ]
        )
        out.append((prompt, f"src/{area}/{module}.py"))
    return out


def _embed(texts: list[str]) -> list[list[float]]:
    return HashedEmbedder().embed(texts)


def embed_parallel(texts: list[str]) -> list[list[float]]:
    chunk = 2000
    parts = [texts[i : i + chunk] for i in range(0, len(texts), chunk)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return [v for part in pool.map(_embed, parts) for v in part]


# -- measuring --------------------------------------------------------------------------------------


def pct(samples: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    p95 = statistics.quantiles(ms, n=20)[-1] if len(ms) >= 2 else ms[0]
    return statistics.median(ms), p95


def timed_each(func: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def timed_cpu(func: Callable[[], object], cpu: list[float]) -> float:
    """Wall time of one call; its CPU time (`time.process_time()`: this process alone, whatever else runs
    on the machine) is appended to `cpu`."""
    start, start_cpu = time.perf_counter(), time.process_time()
    func()
    wall = time.perf_counter() - start
    cpu.append(time.process_time() - start_cpu)
    return wall


def make_project(path: Path, home: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    for rel in repo_files():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# {rel}\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "files"],
        cwd=path,
        check=True,
    )
    init_project(path, home)
    return path


def bench_add(work: Path, home: Path, count: int) -> None:
    project = make_project(work / "adds", home)
    texts = memory_texts(count, seed=99)
    with Workspace.open(project, home=home) as ws:
        start = time.perf_counter()
        for summary, details, category, files in texts:
            ws.add(summary, details=details, category=category, files=files)
        through = time.perf_counter() - start
    raw_dir = work / "raw-notes"
    start = time.perf_counter()
    for summary, details, category, files in texts:
        memory = Memory(id=new_id(), summary=summary, details=details, category=category, files=files)
        write_atomic(raw_dir / notes.note_name(memory), notes.render(memory))
    raw = time.perf_counter() - start
    print(f"\n## add throughput ({count} memories)")
    print(f"{'path':<44}{'memories/s':>12}{'x raw':>8}")
    print(f"{'notes.write_atomic alone (baseline)':<44}{count / raw:>12.0f}{1.0:>8.2f}")
    print(f"{'Workspace.add':<44}{count / through:>12.0f}{raw / through:>8.2f}")


def build_index(
    project: Path, items: list[tuple[str, str, str, tuple[str, ...]]], vectors: list[list[float]]
) -> float:
    store = SQLiteStore(project / ".tether" / "index.db")
    embedder_id = HashedEmbedder().id
    base = datetime(2025, 1, 1, tzinfo=UTC)
    start = time.perf_counter()
    batch = 5000
    for offset in range(0, len(items), batch):
        with store.transaction():
            for i in range(offset, min(offset + batch, len(items))):
                summary, details, category, files = items[i]
                moment = base + timedelta(minutes=i)
                memory = Memory(
                    id=f"{i:08x}",
                    summary=summary,
                    details=details,
                    category=category,
                    files=files,
                    pinned=i % 997 == 0,
                    priority="high" if i % 50 == 0 else "normal",
                    created=moment,
                    updated=moment,
                )
                store.put(memory, None, vectors[i], embedder_id)
    seconds = time.perf_counter() - start
    store.close()
    return seconds


def bench_size(project: Path, home: Path, size: int, runs: int) -> tuple[float, ...]:
    probes = queries(runs)
    conn = sqlite3.connect(project / ".tether" / "index.db")
    from tether.model.text import terms

    def bare_fts(prompt: str) -> None:
        match = " OR ".join('"' + w + '"' for w in terms(prompt))
        conn.execute(
            "SELECT rowid FROM fts_words WHERE fts_words MATCH ? ORDER BY rank LIMIT 10", (match,)
        ).fetchall()

    sources = sorted((Path(__file__).resolve().parents[1] / "src" / "tether").rglob("*.py"))
    for n, path in enumerate(sorted({f for _, f in probes})):
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(sources[n % len(sources)].read_text(encoding="utf-8"), encoding="utf-8")
    no_code = [c for c in CHANNELS if c != "code"]
    with (
        Workspace.open(project, home=home) as ws,
        Workspace.open(project, home=home, warm=True) as hot,
        Workspace.open(project, home=home, warm=True) as ready,
    ):
        for opened in (ws, hot, ready):  # warm caches (page cache, numpy import) outside the timings
            opened.search(probes[0][0])
            opened.recaller().recall(probes[0][0], [probes[0][1]], record=False)
        start = time.perf_counter()
        prepare = getattr(ready.store, "prepare", None)  # main's code before it had none
        while prepare is not None and not prepare(0.01):
            pass
        prepared = time.perf_counter() - start
        fts = [timed_each(lambda p=p: bare_fts(p), 1)[0] for p, _ in probes]
        search = [timed_each(lambda p=p: ws.search(p), 1)[0] for p, _ in probes]
        recall, without, warm, warm_fts, ready_warm, ready_fts = [], [], [], [], [], []
        ready_cpu: list[float] = []
        fts_cpu: list[float] = []
        for p, f in probes:  # interleaved: the machine's noise lands on all alike
            recall.append(timed_each(lambda p=p, f=f: ws.recaller().recall(p, [f], record=False), 1)[0])
            without.append(
                timed_each(lambda p=p, f=f: ws.recaller().recall(p, [f], record=False, channels=no_code), 1)[
                    0
                ]
            )
            warm_fts.append(timed_each(lambda p=p: bare_fts(p), 1)[0])
            warm.append(timed_each(lambda p=p, f=f: hot.recaller().recall(p, [f], record=False), 1)[0])
            ready_fts.append(timed_cpu(lambda p=p: bare_fts(p), fts_cpu))
            ready_warm.append(
                timed_cpu(lambda p=p, f=f: ready.recaller().recall(p, [f], record=False), ready_cpu)
            )
    conn.close()
    ratio = statistics.median(w / b for w, b in zip(warm, warm_fts, strict=True))
    ready_ratio = statistics.median(w / b for w, b in zip(ready_warm, ready_fts, strict=True))
    # CPU time: the ready store's recall and its MATCH, per pair (a probe whose MATCH took no measurable
    # CPU is left out), and in sum.
    cpu_pairs = [r / b for r, b in zip(ready_cpu, fts_cpu, strict=True) if b > 0]
    cpu_ratio = statistics.median(cpu_pairs) if cpu_pairs else math.nan
    cpu_sum = sum(ready_cpu) / sum(fts_cpu) if sum(fts_cpu) else math.nan
    return (
        *pct(fts),
        *pct(search),
        *pct(recall),
        pct(without)[0],
        pct(warm)[0],
        ratio,
        prepared,
        pct(ready_warm)[0],
        ready_ratio,
        statistics.median(ready_cpu) * 1000,
        cpu_ratio,
        cpu_sum,
    )


def growth(medians: dict[int, tuple[float, float, float, float]]) -> None:
    """How each cost grows with the index: the exponent b of cost ~ n^b between each pair of sizes."""
    sizes = sorted(medians)
    for small, large in itertools.pairwise(sizes):
        scale = math.log(large / small)
        b = [math.log(medians[large][i] / medians[small][i]) / scale for i in range(4)]
        print(
            f"  {small} -> {large}: cost ~ n^b with b = {b[0]:.2f} (bare fts), {b[1]:.2f} (recall), "
            f"{b[2]:.2f} (warm recall), {b[3]:.2f} (warm, prepared)"
        )


def bench_cold(project: Path, home: Path, runs: int) -> None:
    env = {**os.environ, "TETHER_HOME": str(home)}

    def proc(*args: str) -> float:
        start = time.perf_counter()
        subprocess.run(args, cwd=project, env=env, check=True, capture_output=True)
        return time.perf_counter() - start

    proc(str(TETHER), "search", "cache key")  # warm .pyc and page cache
    base = [proc(sys.executable, "-c", "import sqlite3") for _ in range(runs)]
    search = [proc(str(TETHER), "search", "why does the cache key change") for _ in range(runs)]
    recall = [
        proc(
            str(TETHER),
            "recall",
            "-p",
            "fix the flaky cache test",
            "-f",
            "src/cache/client.py",
            "--no-record",
        )
        for _ in range(runs)
    ]
    b = statistics.median(base)
    print(f"\n## cold processes ({runs} runs each, median)")
    print(f"{'command':<48}{'ms':>9}{'x base':>9}")
    label = 'python -c "import sqlite3" (baseline)'
    print(f"{label:<48}{b * 1000:>9.1f}{1.0:>9.1f}")
    for label, samples in (
        ("tether search QUERY", search),
        ("tether recall -p P -f FILE --no-record", recall),
    ):
        m = statistics.median(samples)
        print(f"{label:<48}{m * 1000:>9.1f}{m / b:>9.1f}")


HEADER = (
    f"{'memories':>9}{'build s':>9}{'runs':>6}{'fts p50':>9}{'fts p95':>9}{'search p50':>12}{'p95':>8}"
    f"{'x fts':>7}{'recall p50':>12}{'p95':>8}{'x fts':>7}{'code x':>8}{'warm p50':>10}{'x fts':>7}"
    f"{'prep s':>8}{'ready p50':>11}{'x fts':>7}{'cpu ms':>8}{'cpu x':>7}{'sum x':>7}"
)


def row(size: int, build: float, runs: int, figures: Sequence[float]) -> str:
    f50, f95, s50, s95, r50, r95, n50, w50, wx, prep, y50, yx, c50, cx, csum = figures
    return (
        f"{size:>9}{build:>9.1f}{runs:>6}{f50:>9.2f}{f95:>9.2f}{s50:>12.2f}{s95:>8.2f}{s50 / f50:>7.0f}"
        f"{r50:>12.2f}{r95:>8.2f}{r50 / f50:>7.0f}{r50 / n50:>8.2f}{w50:>10.2f}{wx:>7.1f}"
        f"{prep:>8.2f}{y50:>11.2f}{yx:>7.2f}{c50:>8.2f}{cx:>7.2f}{csum:>7.2f}"
    )


def against(
    project: Path, home: Path, size: int, runs: int, sources: dict[str, Path | None], rounds: int
) -> None:
    """Each side's `bench_size` on the same index in its own process, in alternate order: the ready store's
    ratio to its MATCH (wall, then CPU per pair and in sum), and this side's over the other's per round."""
    figures: dict[str, list[list[float]]] = {side: [] for side in sources}
    for n in range(rounds):
        for side in sources if n % 2 == 0 else list(reversed(sources)):
            env = {**os.environ, "TETHER_HOME": str(home)}
            if sources[side] is not None:
                env["TETHER_BENCH_SRC"] = str(sources[side])
            out = subprocess.run(
                [sys.executable, __file__, "--probe", str(project), "--size", str(size), "--runs", str(runs)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            got = [float(x) for x in out.split()[-15:]]
            figures[side].append(got)
            print(f"{row(size, 0.0, runs, got)}  {side}, round {n + 1}", flush=True)
    mine, other = figures["this"], figures["against"]
    for label, at in (("ready x fts", 11), ("cpu x", 13), ("sum x", 14)):
        pairs = [a[at] / b[at] for a, b in zip(mine, other, strict=True)]
        print(
            f"  {size}: {label} this {', '.join(f'{a[at]:.2f}' for a in mine)}; against "
            f"{', '.join(f'{b[at]:.2f}' for b in other)}; per round this / against "
            f"{', '.join(f'{x:.2f}' for x in pairs)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs (about a minute)")
    parser.add_argument("--sizes", help="comma-separated index sizes (default 1000,10000,100000)")
    parser.add_argument("--adds", type=int, help="memories added for the throughput figure (default 300)")
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout's src (the code before a change): its latency rows, run alternately on the same indexes",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds of --against, the order alternating (default 2)"
    )
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # a child of --against: one bench_size
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(*bench_size(args.probe, Path(os.environ["TETHER_HOME"]), args.size, args.runs))
        return
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")).split(",")]
    adds = args.adds or (100 if args.quick else 300)
    cold_runs = 3 if args.quick else 5
    started = time.perf_counter()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_core_"))
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["TETHER_HOME"] = str(home)
    try:
        if not args.against:
            bench_add(work, home, adds)

        items = memory_texts(max(sizes))
        start = time.perf_counter()
        vectors = embed_parallel([f"{s}\n{d}".strip() for s, d, _, _ in items])
        print(
            f"\nembedded {len(items)} generated memories with hashed-v2-384 in {time.perf_counter() - start:.1f}s"
        )
        print("\n## search and recall latency (ms; bare FTS5 MATCH over the same index is the baseline)")
        print(HEADER)
        projects: dict[int, Path] = {}
        medians: dict[int, tuple[float, float, float, float]] = {}
        for size in sizes:
            project = make_project(work / f"p{size}", home)
            build = build_index(project, items[:size], vectors[:size])
            runs = 20 if size >= 100_000 else (50 if size >= 10_000 else 100)
            if args.quick:
                runs = max(10, runs // 2)
            if args.against:
                against(project, home, size, runs, {"this": None, "against": args.against}, args.rounds)
                continue
            figures = bench_size(project, home, size, runs)
            print(row(size, build, runs, figures))
            projects[size] = project
            f50, r50, w50, y50 = figures[0], figures[4], figures[7], figures[10]
            medians[size] = (f50, r50, w50, y50)
        if args.against:
            return
        growth(medians)
        bench_cold(projects[min(sizes, key=lambda s: abs(s - 10_000))], home, cold_runs)
        print(f"\nbench_core total {time.perf_counter() - started:.0f}s")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
