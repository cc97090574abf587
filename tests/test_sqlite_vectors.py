"""`tether.store.sqlite.vectors`: the cosine top-k in plain Python and numpy agree with a reference."""

from __future__ import annotations

import math
import random
from array import array
from pathlib import Path

import pytest

from tether.store.sqlite.vectors import (
    is_sparse,
    top_cosines,
    top_cosines_numpy,
    top_cosines_python,
    transposed,
)

# -- top_cosines: plain Python columns and numpy (sparse and dense product) agree with a reference --


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def reference(rows: list[list[float]], query: list[float], k: int) -> list[int]:
    scores = [sum(a * b for a, b in zip(row, query, strict=True)) for row in rows]
    return sorted(range(len(rows)), key=lambda i: -scores[i])[:k]


@pytest.mark.parametrize("implementation", [top_cosines_python, top_cosines_numpy])
@pytest.mark.parametrize(("rows", "used"), [(1, 3), (40, 3), (3000, 8), (3000, 64)])
def test_every_path_ranks_like_the_reference(implementation: object, rows: int, used: int) -> None:
    rng = random.Random(rows * 100 + used)
    dim = 64  # 8 of 64 dimensions take the sparse numpy product, 64 of 64 the dense one
    matrix = [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(rows)]
    dims = set(rng.sample(range(dim), used))
    query = unit([rng.gauss(0, 1) if i in dims else 0.0 for i in range(dim)])
    blob = array("f", [v for row in matrix for v in row]).tobytes()
    nonzero = [(i, q) for i, q in enumerate(query) if q]
    got = implementation(blob, rows, dim, nonzero, 10)  # type: ignore[operator]
    want = reference(matrix, query, 10)
    assert [i for i, _ in got] == want
    best = sum(a * b for a, b in zip(matrix[want[0]], query, strict=True))
    assert got[0][1] == pytest.approx(best, abs=1e-5)
    for warm in (False, True):
        dispatched = top_cosines(blob, rows, dim, query, 10, warm=warm)
        assert [i for i, _ in dispatched] == want
        assert [c for _, c in dispatched] == pytest.approx([c for _, c in got], abs=1e-5)


def test_a_memoryview_of_a_mapped_file_works_like_bytes(tmp_path: object) -> None:
    blob = array("f", [1.0, 0.0, 0.6, 0.8, 0.0, 1.0]).tobytes()
    view = memoryview(b"header\n" + blob)[7:]
    nonzero = [(1, 1.0)]
    assert top_cosines_python(view, 3, 2, nonzero, 2) == top_cosines_python(blob, 3, 2, nonzero, 2)
    assert [i for i, _ in top_cosines_python(view, 3, 2, nonzero, 2)] == [2, 1]


def test_vectors_of_another_dimension_are_never_compared() -> None:
    blob = array("f", [1.0, 0.0] * 3).tobytes()
    assert top_cosines(blob, 3, 2, [1.0, 0.0, 0.0], 2) == []
    assert top_cosines(blob, 3, 2, [0.0, 0.0], 2) == []


@pytest.mark.parametrize(("rows", "used"), [(1, 1), (7, 1), (700, 3), (1500, 16)])
def test_a_sparse_query_by_column_is_the_same_bit_for_bit(rows: int, used: int) -> None:
    """A warm store multiplies a sparse query's columns from its copy by column: the cosines must be the
    very floats the row-major matrix gives (ranks, ties and receipts depend on them)."""
    rng = random.Random(rows + used)
    dim = 64
    blob = array("f", [v for _ in range(rows) for v in unit([rng.gauss(0, 1) for _ in range(dim)])]).tobytes()
    columns = transposed(blob, rows, dim)
    for _ in range(20):
        dims = sorted(rng.sample(range(dim), used))  # as `top_cosines` lists them: the summing order
        nonzero = [(i, rng.gauss(0, 1)) for i in dims]
        assert is_sparse(nonzero, dim)
        k = rng.choice([1, 10, rows])
        plain = top_cosines_numpy(blob, rows, dim, nonzero, k)
        assert top_cosines_numpy(blob, rows, dim, nonzero, k, columns=columns) == plain
        query = [0.0] * dim
        for i, q in nonzero:
            query[i] = q
        assert top_cosines(blob, rows, dim, query, k, warm=True, columns=lambda: columns) == plain


def test_a_warm_store_says_what_it_keeps_between_queries(tmp_path: Path) -> None:
    # What `tether resident status` reports (`held_mib`): the loaded vectors, and the copy by column a
    # sparse (hashed) query made.
    from tether.embed import HashedEmbedder
    from tether.model.memory import Memory
    from tether.store.sqlite.store import SQLiteStore

    embedder = HashedEmbedder()
    store = SQLiteStore(tmp_path / "index.db", warm=True)
    texts = [f"upload retry number {n}" for n in range(20)]
    for n, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True)):
        store.put(Memory(id=f"{n:08x}", summary=text), None, vector, embedder.id)
    assert store.held() == {}
    for _ in range(2):
        store.nearest(embedder.id, embedder.embed(["retry"])[0], 3)
    assert store.held() == {"vectors": 20 * embedder.dimension * 4, "columns": 20 * embedder.dimension * 4}
    store.close()
