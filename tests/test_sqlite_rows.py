"""`tether.store.sqlite.rows`: a memory read back from its row is the memory written, field for field."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.model.anchor import Anchor
from tether.model.memory import Memory
from tether.store.sqlite.rows import COLUMNS, memory_of
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)


@pytest.mark.parametrize(
    "memory",
    [
        Memory("0000000a", "plain", created=T0, updated=T0),
        Memory(
            "0000000b",
            "everything",
            details="Why: [[0000000a]]",
            category="gotcha",
            files=("src/app.py", "docs/"),
            priority="high",
            pinned=True,
            origin="agent",
            supersedes="0000000a",
            status="archived",
            created=T0,
            updated=T1,
            anchors=(Anchor("src/app.py", symbol="upload"),),
            tags=("billing",),
            aliases=("Upload rule",),
        ),
    ],
)
def test_a_row_reads_back_as_the_memory_written(tmp_path: Path, memory: Memory) -> None:
    store = SQLiteStore(tmp_path / "index.db")
    try:
        store.put(memory)
        row = store.conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM memories WHERE id = ?", (memory.id,)
        ).fetchone()
        read = memory_of(row)
        assert read == memory and read.content_hash == memory.content_hash
        assert (read.created == read.updated) is (memory.created == memory.updated)
    finally:
        store.close()
