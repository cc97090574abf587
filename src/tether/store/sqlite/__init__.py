"""The SQLite index: `schema` (migrations), `store`, `repomap` (its tables), `vectors` (the cache and top-k),
`errors` (sqlite3's exceptions as tether's), `recovery` (proving damage before rebuilding), `foreign` (another
tool's database, read-only, for imports).

The only package that imports sqlite3; imports `tether.store.base`, `tether.model` and `tether.errors`.
"""
