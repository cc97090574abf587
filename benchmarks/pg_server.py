"""A Postgres with pgvector and pg_trgm for the benchmarks: `TETHER_BENCH_DATABASE_URL`, else pgserver's.

pgserver's server listens on a unix socket in a temporary directory (no TCP port), and stops with the
benchmark. Each benchmark makes databases of its own on it (`fresh_database`).
"""

from __future__ import annotations

import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg


@contextmanager
def server(max_connections: int = 100) -> Iterator[str]:
    """The URL of a server's maintenance database (`postgres`), accepting `max_connections` clients."""
    given = os.environ.get("TETHER_BENCH_DATABASE_URL")
    if given:
        yield given
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
        from pgserver._commands import pg_ctl
        from pgserver.utils import PostmasterInfo
    with tempfile.TemporaryDirectory(prefix="tether-bench-pg-") as tmp:
        data = Path(tmp) / "data"
        pg = pgserver.get_server(data, cleanup_mode="stop")
        try:
            if max_connections > 100:  # the default: each session holds one or two
                with psycopg.connect(pg.get_uri(), autocommit=True) as conn:
                    conn.execute(f"ALTER SYSTEM SET max_connections = {int(max_connections)}")
                pg_ctl(["-w", "restart"], pgdata=data, user=pg.system_user, timeout=60)
                pg._postmaster_info = PostmasterInfo.read_from_pgdata(data)
            yield pg.get_uri()
        finally:
            pg.cleanup()


def database_url(server_url: str, name: str) -> str:
    base, _, query = server_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@contextmanager
def fresh_database(server_url: str, prefix: str = "bench") -> Iterator[str]:
    """A new database for one measurement, dropped afterwards. HNSW builds get room to work in memory."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        # A 100k-vector HNSW graph does not fit pgvector's default 64 MB and would build far slower.
        conn.execute(f"ALTER DATABASE {name} SET maintenance_work_mem = '1GB'")
    try:
        yield database_url(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
