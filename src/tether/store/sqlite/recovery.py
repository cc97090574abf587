"""Opening the index when it may be damaged: prove the damage, move the file aside, start a new one.

The index is derived from the notes, so a damaged one costs only telemetry; but a *busy*, full or
read-only one is not damaged, and moving it aside would destroy the live index other sessions hold open.
So damage is declared only when SQLite itself says the file is not a database or fails `quick_check`.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from pathlib import Path

from tether.errors import StoreDamaged


def proven_damaged(index: Path) -> bool:
    """Whether `index` is not a database or fails `PRAGMA quick_check`, read-only and without waiting.

    A lock, a missing file or an unreadable directory proves nothing: the answer is False."""
    if not index.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError:
        return False  # locked, busy, I/O: not proof of damage
    except sqlite3.DatabaseError:
        return True  # "file is not a database", "database disk image is malformed"
    finally:
        conn.close()
    return rows != [("ok",)]


def move_aside(index: Path, now: datetime) -> Path:
    """Rename a damaged index to `index.db.damaged-<time>` (kept for inspection) with its WAL files gone."""
    target = index.with_name(f"{index.name}.damaged-{now:%Y%m%dT%H%M%S}")
    os.replace(index, target)
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    return target


def check_damage(index: Path, error: StoreDamaged) -> None:
    """Re-raise `error` unless the damage is proven: an unproven one is reported, never "recovered"."""
    if not proven_damaged(index):
        raise error
