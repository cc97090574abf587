"""The search channels in SQL: the weighted word index, pg_trgm substrings, and HNSW nearest neighbours.

Functions over a connection and the tenant's visibility parameters (`tether.store.postgres.rows`), used
by `PostgresStore`; and the HNSW index builds, one index per embedder and dimension (a `vector` column
holds any dimension, an HNSW index only one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from tether.store.base import TextHit
from tether.store.postgres import rows
from tether.store.postgres.schema import MIGRATION_LOCK, TEXT_CONFIG

Conn = psycopg.Connection[tuple[Any, ...]]
# HNSW's candidate list per query: pgvector's default is 40. With a real model's vectors (MiniLM, 10k
# memories) recall@10 against exact cosine is 0.993 at 100 and 0.971 at 40, for 0.3 ms more a query;
# the hashed embedder's sparse vectors are harder (0.78 at 100k). benchmarks/bench_store.py measures both.
EF_SEARCH = 100
# HNSW build parameters: pgvector's defaults (m 16, ef_construction 64).
HNSW_WITH = "m = 16, ef_construction = 64"


def text(
    conn: Conn,
    visible: dict[str, Any],
    words: Sequence[str],
    limit: int,
    *,
    trigram: bool,
    among: Sequence[str] | None = None,
) -> list[TextHit]:
    """Up to `limit` hits from each index for any of `words` (OR): `ts_rank` over the weighted
    tsvector, and the words found as substrings (`_substrings`); with `among`, only those memories."""
    hits: dict[str, list[float]] = {}
    params: dict[str, Any] = {**visible, "limit": limit, "weights": rows.RANK_WEIGHTS}
    only = sql.SQL("TRUE")
    if among is not None:
        params["among"] = list(among)
        only = sql.SQL("id = ANY(%(among)s)")
    terms = []
    for n, word in enumerate(words):
        params[f"w{n}"] = rows.fold(word)
        # One plainto_tsquery a word, OR-ed: the words are data, never tsquery syntax.
        terms.append(
            sql.SQL("plainto_tsquery({}, {})").format(sql.Literal(TEXT_CONFIG), sql.Placeholder(f"w{n}"))
        )
    words_sql = sql.SQL(
        "SELECT id, ts_rank(%(weights)s::float4[], words, q) FROM tether_memories, ({}) AS query(q)"
        " WHERE words @@ q AND status = 'active' AND {} AND {} ORDER BY 2 DESC, id LIMIT %(limit)s"
    ).format(sql.SQL("SELECT ") + sql.SQL(" || ").join(terms), rows.VISIBLE, only)
    for mid, score in conn.execute(words_sql, params):
        hits.setdefault(mid, [0.0, 0.0])[0] = float(score)
    needles = list(dict.fromkeys(w.lower() for w in words if len(w) >= 3)) if trigram else []
    if needles:
        for mid, score in conn.execute(*_substrings(visible, needles, limit, among)):
            hits.setdefault(mid, [0.0, 0.0])[1] = float(score)
    return [TextHit(mid, s[0], s[1]) for mid, s in hits.items()]


def _substrings(
    visible: dict[str, Any], needles: list[str], limit: int, among: Sequence[str] | None = None
) -> tuple[sql.Composed, dict[str, Any]]:
    """The trigram channel's query: memories holding any needle as a substring (pg_trgm's GIN index
    serves the LIKEs), scored like bm25 without lengths: the sum of the found needles' idf, so a rare
    substring counts for more than a common one (what FTS5's trigram bm25 gives the SQLite index)."""
    params: dict[str, Any] = {**visible, "limit": limit}
    only = sql.SQL("TRUE")
    if among is not None:
        params["among"] = list(among)
        only = sql.SQL("id = ANY(%(among)s)")
    found, hit_flags, df_counts, idf_terms = [], [], [], []
    for n, needle in enumerate(needles):
        params[f"p{n}"] = rows.like_pattern(needle)
        found.append(sql.SQL("grams LIKE {}").format(sql.Placeholder(f"p{n}")))
        hit_flags.append(sql.SQL("grams LIKE {} AS h{}").format(sql.Placeholder(f"p{n}"), sql.SQL(str(n))))
        df_counts.append(sql.SQL("count(*) FILTER (WHERE h{0}) AS d{0}").format(sql.SQL(str(n))))
        idf_terms.append(
            sql.SQL("CASE WHEN h{0} THEN ln(1 + (n.n - d{0} + 0.5) / (d{0} + 0.5)) ELSE 0 END").format(
                sql.SQL(str(n))
            )
        )
    statement = sql.SQL(
        "WITH hit AS (SELECT id, {flags} FROM tether_memories WHERE ({found}) AND status = 'active' AND {visible}"
        " AND {only}),"
        " df AS (SELECT {counts} FROM hit),"
        " n AS (SELECT count(*)::float8 AS n FROM tether_memories WHERE status = 'active' AND {visible})"
        " SELECT id, {score} FROM hit, df, n ORDER BY 2 DESC, id LIMIT %(limit)s"
    ).format(
        flags=sql.SQL(", ").join(hit_flags),
        found=sql.SQL(" OR ").join(found),
        visible=rows.VISIBLE,
        only=only,
        counts=sql.SQL(", ").join(df_counts),
        score=sql.SQL(" + ").join(idf_terms),
    )
    return statement, params


def nearest(
    conn: Conn, visible: dict[str, Any], embedder: str, vector: Sequence[float], k: int
) -> list[tuple[str, float]]:
    """The `k` active memories with `embedder` vectors of `vector`'s dimension closest by cosine."""
    dim = len(vector)
    typed = sql.SQL("vector({})").format(sql.Literal(dim))
    distance = sql.SQL("(vector::{0} <=> %(q)s::{0})").format(typed)
    # Literals, not parameters, for the embedder and dimension: the planner must see them to match the
    # partial index (`build_indexes`).
    statement = sql.SQL(
        "SELECT id, 1 - {distance} FROM tether_memories WHERE embedder = {embedder} AND dim = {dim}"
        " AND status = 'active' AND {visible} ORDER BY {distance} LIMIT %(k)s"
    ).format(distance=distance, embedder=sql.Literal(embedder), dim=sql.Literal(dim), visible=rows.VISIBLE)
    with conn.transaction():
        # Filtered HNSW scans go on until k rows pass the filter (pgvector 0.8's iterative scan); its
        # "relaxed" order is re-sorted below by the exact distances returned.
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            (str(max(EF_SEARCH, k)),),
        )
        found = [
            (mid, float(cos))
            for mid, cos in conn.execute(statement, {**visible, "q": rows.vector_literal(vector), "k": k})
        ]
    return sorted(found, key=lambda item: -item[1])


def index_name(embedder: str, dim: int) -> str:
    return "tether_vec_" + hashlib.sha1(f"{embedder}\0{dim}".encode()).hexdigest()[:16]


def build_indexes(conn: Conn, wanted: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """An HNSW index for each (embedder, dimension) in `wanted` that has none, built concurrently (writers
    go on), once per database. Returns those that have one now. `conn` is in autocommit mode."""
    done: set[tuple[str, int]] = set()
    # Never wait for the lock: a concurrent build waits for every open transaction, a waiter's included,
    # and the two would deadlock. Whoever holds it builds; the others go on without (exact scans).
    locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()
    if not locked or not locked[0]:
        return done
    try:
        for embedder, dim in sorted(wanted):
            name = index_name(embedder, dim)
            known = "SELECT 1 FROM tether_vector_indexes WHERE embedder = %s AND dim = %s"
            if conn.execute(known, (embedder, dim)).fetchone() is None:
                # A concurrent build that failed leaves an invalid index behind: start again.
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX CONCURRENTLY {name} ON tether_memories USING hnsw"
                        " ((vector::vector({dim})) vector_cosine_ops) WITH ({opts})"
                        " WHERE embedder = {embedder} AND dim = {dim}"
                    ).format(
                        name=sql.Identifier(name),
                        dim=sql.Literal(dim),
                        opts=sql.SQL(HNSW_WITH),
                        embedder=sql.Literal(embedder),
                    )
                )
                conn.execute("INSERT INTO tether_vector_indexes VALUES (%s, %s, %s)", (embedder, dim, name))
            done.add((embedder, dim))
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return done
