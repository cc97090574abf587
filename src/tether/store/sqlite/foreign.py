"""Reading another tool's SQLite database, read-only (`tether import --from claude-mem`).

This package is the only one importing sqlite3, so the rows are read here and handed up as plain dicts;
`tether.intake.foreign` turns them into memories.

>>> rows = read_rows(Path("~/.claude-mem/claude-mem.db").expanduser(), "observations")  # doctest: +SKIP
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tether.errors import ValidationError

__all__ = ["read_rows"]


def read_rows(path: Path, table: str) -> list[dict[str, Any]]:
    """Every row of `table` in the database at `path`, as {column: value}, opened read-only (the other
    tool may be running: nothing is written, no journal created). Raises `ValidationError` naming the
    file when it is missing, not a database, or has no such table."""
    if not path.is_file():
        raise ValidationError(f"{path}: no such database file")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise ValidationError(f"{path}: cannot open it read-only: {exc}") from None
    try:
        conn.row_factory = sqlite3.Row
        known = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if table not in known:
            raise ValidationError(
                f"{path}: has no {table} table (tables: {', '.join(sorted(known)) or 'none'}): "
                "is it the right database?"
            )
        return [dict(row) for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
    except sqlite3.DatabaseError as exc:
        raise ValidationError(f"{path}: not a readable SQLite database: {exc}") from None
    finally:
        conn.close()
