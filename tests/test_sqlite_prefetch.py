"""`tether.store.sqlite.prefetch`: a warm store's quiet moments read every active memory, every path's owners
and the common words' postings ahead, in slices, once per version of the index; what searches return stays
what the SQL returns."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.store.sqlite.prefetch import common_words
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
COMMON = ["upload", "retry", "cache"]
RARE = [
    f"rare{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}{chr(97 + n // 676)}" for n in range(1000)
]  # no parts


@pytest.fixture
def path(tmp_path: Path) -> Path:
    rng = random.Random(2)
    store = SQLiteStore(tmp_path / "index.db")
    with store.transaction():
        for n in range(300):
            words = [*rng.sample(COMMON, rng.randint(1, 3)), rng.choice(RARE)]
            files = (f"src/{rng.choice(COMMON)}.py",)
            store.put(Memory(f"{n:08x}", " ".join(words), files=files, created=T0, updated=T0))
    store.close()
    return tmp_path / "index.db"


@pytest.fixture
def stores(path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    plain, warm = SQLiteStore(path), SQLiteStore(path, warm=True)
    try:
        yield plain, warm
    finally:
        plain.close()
        warm.close()


def reads(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    return seen


def prepare(store: SQLiteStore) -> int:
    slices = 1
    while not store.prepare(0.0):  # no time at all: one posting list per slice
        slices += 1
    return slices


def test_the_common_words_are_those_a_share_of_the_memories_hold(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    _, warm = stores
    found = common_words(warm)
    assert set(COMMON) <= set(found) and not set(RARE) & set(found)  # a rare word is held by ~0.3 of 300
    assert found.index("src") < found.index("upload")  # every memory names a file under src/


def test_after_the_quiet_moments_searches_read_nothing_and_answer_the_same(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    plain, warm = stores
    assert prepare(warm) > 3  # in slices
    assert warm.prepare(0.0)  # done for this version
    seen = reads(warm)
    for words in (["upload"], ["retry", "cache"], ["cache", "upload", "retry"]):
        assert warm.text(words, 50) == plain.text(words, 50)
    assert warm.owners(["src/upload.py", "src/", "README.md"]) == plain.owners(
        ["src/upload.py", "src/", "README.md"]
    )
    assert warm.memories(["00000001"]) == plain.memories(["00000001"])
    assert not [sql for sql in seen if "MATCH" in sql or "file_refs" in sql or "WHERE id IN" in sql]


def test_a_write_of_new_words_makes_them_ready_again(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    plain, warm = stores
    prepare(warm)
    plain.put(Memory("ffff0001", "upload retry cache twice", created=T0, updated=T0))  # another process's
    assert not warm.prepare(0.0)  # the postings went with the bm25 statistics: fetched again
    prepare(warm)
    seen = reads(warm)
    assert warm.text(["upload", "cache"], 50) == plain.text(["upload", "cache"], 50)
    assert not [sql for sql in seen if "MATCH" in sql]
    plain.put(plain.get("ffff0001").with_changes(pinned=True))  # type: ignore[union-attr]
    assert warm.prepare(0.0)  # a pin keeps every posting: nothing to fetch


def test_a_store_that_is_not_warm_has_nothing_to_prepare(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    plain, _ = stores
    seen = reads(plain)
    assert plain.prepare(0.0)
    assert seen == []
