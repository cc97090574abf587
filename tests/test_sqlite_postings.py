"""`tether.store.sqlite.postings`: a warm store's full-text search, summed from each term's kept postings,
returns what the SQL OR queries return, float for float and in the same order, before and after writes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.embed import HashedEmbedder
from tether.model.memory import Memory
from tether.store.sqlite.postings import WORDS, TermPostings
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
# A small vocabulary: most memories share most words, so bm25 ties are everywhere (their order is the test).
VOCABULARY = "upload retry backoff config cache token deploy staging queue worker refund invoice".split()
QUERY_WORDS = [
    *VOCABULARY,
    "uploads",  # stems like `upload` in the word index, a substring of nothing in the trigram one
    "parse_httpheader",  # a phrase of two tokens in the word index
    "naïve",
    'say "hi"',  # a quote inside a phrase
    "__",  # no token at all
    "zz",  # too short for a trigram
    "absent",
]
EMBEDDER = HashedEmbedder()


def corpus(rng: random.Random, count: int) -> list[Memory]:
    out = []
    for n in range(count):
        summary = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 6)))
        details = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(0, 12)))
        if n % 7 == 0:
            details += " parse_HTTPHeader naïve café"
        files = (f"src/{rng.choice(VOCABULARY)}.py",) if n % 3 else ()
        out.append(
            Memory(id=f"{n:08x}", summary=summary, details=details, files=files, created=T0, updated=T0)
        )
    return out


def put(store: SQLiteStore, memory: Memory) -> None:
    store.put(memory, None, EMBEDDER.embed([memory.text])[0], EMBEDDER.id)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """The same index through a plain store (the SQL) and a warm one (the postings)."""
    rng = random.Random(5)
    plain = SQLiteStore(tmp_path / "index.db")
    with plain.transaction():
        for memory in corpus(rng, 300):
            put(plain, memory)
        for n in range(0, 300, 11):
            put(plain, plain.get(f"{n:08x}").with_changes(status="archived"))  # type: ignore[union-attr]
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        yield plain, warm
    finally:
        plain.close()
        warm.close()


def queries(
    seed: int, ids: list[str], count: int = 60
) -> Iterator[tuple[list[str], int, bool, list[str] | None]]:
    rng = random.Random(seed)
    for n in range(count):
        words = rng.sample(QUERY_WORDS, rng.randint(1, 6))
        if n % 5 == 0:
            words.append(words[0])  # a repeated phrase counts twice in the OR query: here too
        among = rng.sample(ids, rng.randint(1, 40)) if n % 3 == 0 else None
        yield words, rng.choice([1, 5, 50, 1000]), bool(n % 2), among


def test_every_query_returns_what_the_sql_returns(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    plain, warm = stores
    ids = [f"{n:08x}" for n in range(320)]  # some unknown, some archived
    for _ in range(2):  # cold postings, then kept ones
        for words, limit, trigram, among in queries(1, ids):
            want = plain.text(words, limit, trigram=trigram, among=among)
            assert warm.text(words, limit, trigram=trigram, among=among) == want, (words, limit, among)


def test_ties_come_in_the_order_sqlite_leaves_them(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    plain, warm = stores
    hits = plain.text(["upload"], 1000, trigram=False)
    scores = [h.words for h in hits]
    assert len(set(scores)) < len(scores) * 0.75  # the fixture is full of ties
    assert [h.id for h in warm.text(["upload"], 1000, trigram=False)] == [h.id for h in hits]


def test_a_write_from_any_connection_drops_the_postings(
    stores: tuple[SQLiteStore, SQLiteStore], tmp_path: Path
) -> None:
    plain, warm = stores
    words = ["retry", "backoff", "kafka"]
    assert warm.text(words, 50) == plain.text(words, 50)
    other = SQLiteStore(tmp_path / "index.db")  # another process's write: the version in the file moves
    try:
        put(other, Memory(id="f0000001", summary="Kafka retry backoff", created=T0, updated=T0))
        put(other, other.get("00000001").with_changes(status="archived"))  # type: ignore[union-attr]
        other.remove("00000002")
    finally:
        other.close()
    got = warm.text(words, 50)
    assert got == plain.text(words, 50)
    assert "f0000001" in {h.id for h in got} and not {"00000001", "00000002"} & {h.id for h in got}
    put(warm, Memory(id="f0000002", summary="Kafka again", created=T0, updated=T0))  # its own write too
    assert warm.text(["kafka"], 50) == plain.text(["kafka"], 50)
    assert {h.id for h in warm.text(["kafka"], 50)} == {"f0000001", "f0000002"}


def fts_queries(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store.conn.set_trace_callback(lambda sql: seen.append(sql) if " MATCH " in sql else None)
    return seen


def test_writes_that_leave_the_text_as_it_was_keep_the_postings(
    stores: tuple[SQLiteStore, SQLiteStore], tmp_path: Path
) -> None:
    # A pin, an archive, a restore, new vectors: bm25's statistics stand, so every kept share does; what is
    # active is read anew. An edit of the words drops them.
    plain, warm = stores
    words = ["retry", "backoff", "cache"]
    assert warm.text(words, 50) == plain.text(words, 50)
    seen = fts_queries(warm)
    other = SQLiteStore(tmp_path / "index.db")
    try:
        top = warm.text(words, 50)[0].id
        put(other, other.get(top).with_changes(status="archived"))  # type: ignore[union-attr]
        put(other, other.get("00000003").with_changes(pinned=True))  # type: ignore[union-attr]
        put(other, other.get(f"{0:08x}").with_changes(status="active"))  # type: ignore[union-attr]
        other.put_vectors(EMBEDDER.id, [("00000004", EMBEDDER.embed(["something else"])[0])])
        got = warm.text(words, 50)
        assert got == plain.text(words, 50) and top not in {h.id for h in got}
        assert seen == []  # no term was fetched again
        put(other, other.get("00000005").with_changes(details="retry retry retry"))  # type: ignore[union-attr]
    finally:
        other.close()
    assert warm.text(words, 50) == plain.text(words, 50)
    assert len(seen) == 6  # three terms, two indexes: fetched anew


def test_kept_postings_match_the_sql_through_random_writes(
    stores: tuple[SQLiteStore, SQLiteStore], tmp_path: Path
) -> None:
    plain, warm = stores
    rng = random.Random(9)
    ids = [f"{n:08x}" for n in range(300)]
    other = SQLiteStore(tmp_path / "index.db")
    try:
        for step in range(40):
            mid = rng.choice(ids)
            current = other.get(mid)
            kind = rng.randrange(4)
            if current is None or kind == 0:
                put(
                    other, Memory(id=mid, summary=" ".join(rng.sample(VOCABULARY, 3)), created=T0, updated=T0)
                )
            elif kind == 1:
                put(other, current.with_changes(status=rng.choice(["active", "archived"])))
            elif kind == 2:
                put(other, current.with_changes(pinned=not current.pinned, priority="high"))
            else:
                other.remove(mid)
            for words, limit, trigram, among in queries(step, ids, count=4):
                want = plain.text(words, limit, trigram=trigram, among=among)
                assert warm.text(words, limit, trigram=trigram, among=among) == want, (step, words)
    finally:
        other.close()


def test_past_the_bound_the_oldest_terms_go_and_answers_stay(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    plain, _ = stores
    postings = TermPostings(plain.conn, max_postings=400)
    version = plain.version()
    for words, limit, _trigram, among in queries(2, [f"{n:08x}" for n in range(300)], count=30):
        limit = len(among) if among is not None else limit  # as `text` does
        got = postings.ranked(WORDS, words, limit, version=version, among=among)
        assert [(h.id, h.words) for h in plain.text(words, limit, trigram=False, among=among)] == got
        assert postings._held <= 400 or len(postings._terms) == 1


def test_an_empty_index_and_nothing_matching(tmp_path: Path) -> None:
    warm = SQLiteStore(tmp_path / "index.db", warm=True)
    try:
        assert warm.text(["upload"], 50) == []
        put(warm, Memory(id="0000000a", summary="Upload retries", created=T0, updated=T0))
        assert warm.text(["absent"], 50) == [] and warm.text(["upload"], 50, among=["0000000b"]) == []
        assert [h.id for h in warm.text(["upload"], 50)] == ["0000000a"]
    finally:
        warm.close()


@pytest.mark.parametrize("limit", [0, 1, 3, 10, 50, 400])
def test_the_top_of_many_is_the_head_of_a_stable_sort(limit: int) -> None:
    import numpy as np

    from tether.store.sqlite.postings import _top

    rng = np.random.default_rng(limit)
    keys = rng.integers(0, 12, size=500).astype(np.float64) / 4  # full of ties
    assert _top(keys, limit).tolist() == np.argsort(keys, kind="stable")[:limit].tolist()
