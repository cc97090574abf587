"""The `postgres` extra, checked before anything imports it: a missing one is an error that names it.

Hooks run on every prompt: psycopg (about 100 ms to import) is loaded only by a workspace that has a team
database configured, never on the default SQLite path. `require()` runs before the modules that import
psycopg at their top are imported.
"""

from __future__ import annotations

import importlib.util

from tether.errors import StoreUnavailable

EXTRA_HINT = "pip install 'tether[postgres]'"


def require() -> None:
    """Raise `StoreUnavailable` naming the extra when psycopg or its pool is not installed."""
    missing = [name for name in ("psycopg", "psycopg_pool") if importlib.util.find_spec(name) is None]
    if missing:
        raise StoreUnavailable(
            f"a team database is configured (TETHER_DATABASE_URL or database.url in $TETHER_HOME/config.toml)"
            f" but {' and '.join(missing)} is not installed: {EXTRA_HINT}, or unset the setting to use the"
            " checkout's own index"
        )
