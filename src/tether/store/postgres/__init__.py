"""The team database: memories, search and the event log on Postgres with pgvector and pg_trgm (issue 13).

`store` (`PostgresStore`: `MemoryStore`, `SearchIndex`, `EventLog`), `schema` (named migrations),
`errors` (psycopg's exceptions as tether's), `tenancy` (the project and user ids rows are keyed by),
`team` (`TeamStore`: the composite `Store` a workspace uses, shared protocols in Postgres and the
checkout-local ones in its SQLite index), `transfer` (`tether store copy`), `driver` (the lazy import of
the `postgres` extra).

The only package that imports psycopg; imports `tether.store.base`, `tether.model`, `tether.fs` and
`tether.errors`. It never imports another backend: the local half of a `TeamStore` is typed as
`tether.store.base.Store`, and `tether.workspace` passes it in.
"""
