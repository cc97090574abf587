"""`tether.store.sqlite.owners`: a warm store's kept owners of each path are what the SQL reads, in its order,
before and after writes from any connection."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.store.sqlite.owners import PathOwners, read_owners
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PATHS = ["src/", "src/app/", "src/app/upload.py", "src/app/billing.py", "docs/", "docs/guide.md", "README.md"]


def fill(store: SQLiteStore, rng: random.Random, count: int) -> None:
    with store.transaction():
        for n in range(count):
            files = tuple(rng.sample(PATHS, rng.randint(0, 3)))
            status = "archived" if n % 9 == 0 else "active"
            store.put(Memory(f"{n:08x}", f"memory {n}", files=files, status=status, created=T0, updated=T0))


def test_kept_owners_are_what_the_sql_reads_in_its_order(tmp_path: Path) -> None:
    rng = random.Random(3)
    plain = SQLiteStore(tmp_path / "index.db")
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        fill(plain, rng, 120)
        for _ in range(2):  # read, then kept
            for _ in range(40):
                asked = rng.sample([*PATHS, "src/gone.py"], rng.randint(1, 5))
                want = plain.owners(asked)
                got = warm.owners(asked)
                assert got == want and list(got) == list(want), asked
    finally:
        plain.close()
        warm.close()


def test_a_write_from_another_connection_is_seen(tmp_path: Path) -> None:
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        warm.put(Memory("0000000a", "upload rule", files=("src/app/upload.py",), created=T0, updated=T0))
        assert warm.owners(["src/app/upload.py"]) == {"src/app/upload.py": ["0000000a"]}
        other = SQLiteStore(tmp_path / "index.db")  # another process's writes: the version in the file moves
        try:
            other.put(Memory("0000000b", "another", files=("src/app/upload.py",), created=T0, updated=T0))
            other.put(other.get("0000000a").with_changes(status="archived"))  # type: ignore[union-attr]
        finally:
            other.close()
        assert warm.owners(["src/app/upload.py"]) == {"src/app/upload.py": ["0000000b"]}
        warm.remove("0000000b")  # its own write too
        assert warm.owners(["src/app/upload.py"]) == {}
    finally:
        warm.close()


@pytest.mark.parametrize("all_read", [False, True])
def test_kept_owners_match_the_sql_through_random_writes(tmp_path: Path, all_read: bool) -> None:
    # Each write drops the lists holding the memory it wrote and those of the paths it names now; the rest
    # are kept, and must still be what the SQL reads. `all_read`: every path's owners read at once first
    # (a warm store's quiet moment), so a path left out means no owner.
    rng = random.Random(8)
    plain = SQLiteStore(tmp_path / "index.db")
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        fill(plain, rng, 80)
        if all_read:
            warm._owners.load_all(version=warm.version())  # type: ignore[union-attr]
            assert warm._owners._complete  # type: ignore[union-attr]
        for step in range(120):
            asked = rng.sample([*PATHS, "src/gone.py"], rng.randint(1, 5))
            got = warm.owners(asked)
            want = plain.owners(asked)
            assert got == want and list(got) == list(want), (step, asked)
            mid = f"{rng.randrange(90):08x}"
            current = plain.get(mid)
            if current is None or step % 4 == 0:
                files = tuple(rng.sample(PATHS, rng.randint(0, 3)))
                plain.put(Memory(mid, f"memory {mid}", files=files, created=T0, updated=T0))
            elif step % 4 == 1:
                plain.put(current.with_changes(status=rng.choice(["active", "archived"])))
            elif step % 4 == 2:
                plain.put(current.with_changes(files=tuple(rng.sample(PATHS, rng.randint(0, 3)))))
            else:
                plain.remove(mid)
    finally:
        plain.close()
        warm.close()


def test_a_write_keeps_the_lists_it_cannot_change(tmp_path: Path) -> None:
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        fill(warm, random.Random(4), 40)
        warm.owners(PATHS)
        kept = dict(warm._owners._owners)  # type: ignore[union-attr]
        warm.put(Memory("ffff0001", "a new docs rule", files=("docs/guide.md",), created=T0, updated=T0))
        assert warm.owners(["docs/guide.md"])["docs/guide.md"][-1] == "ffff0001"
        now = warm._owners._owners  # type: ignore[union-attr]
        assert {p for p in PATHS if now.get(p) is kept[p]} == set(PATHS) - {"docs/guide.md"}
    finally:
        warm.close()


def test_every_path_read_at_once_is_what_the_sql_reads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.db")
    try:
        fill(store, random.Random(6), 60)
        owners = PathOwners(store.conn)
        owners.load_all(version=store.version())
        for path in [*PATHS, "src/gone.py"]:
            assert owners.owners([path], version=store.version()) == read_owners(store.conn, [path])
        seen: list[str] = []
        version = store.version()
        store.conn.set_trace_callback(seen.append)
        owners.owners(["src/", "docs/nothing.md"], version=version)
        assert seen == []  # known, or known to have none: nothing read
        store.conn.set_trace_callback(None)
        small = PathOwners(store.conn, max_paths=2)
        small.load_all(version=store.version())
        assert not small._complete  # more paths than it may keep: read as asked
    finally:
        store.close()


def test_the_kept_lists_are_bounded_and_never_handed_out(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.db")
    try:
        fill(store, random.Random(4), 40)
        owners = PathOwners(store.conn, max_paths=2)
        version = store.version()
        for path in PATHS:
            assert owners.owners([path], version=version) == read_owners(store.conn, [path])
        assert len(owners._owners) <= 3
        got = owners.owners(["src/"], version=version)
        got["src/"].append("ffffffff")  # the caller's list is its own
        assert owners.owners(["src/"], version=version) == read_owners(store.conn, ["src/"])
    finally:
        store.close()
