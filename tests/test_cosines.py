"""`top_cosines` has three paths (plain loop, sparse columns, dense product): all agree with a reference."""

from __future__ import annotations

import math
import random
from array import array

import pytest

from tether.recall import PURE_PYTHON_WORK, top_cosines


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def reference(rows: list[list[float]], query: list[float], k: int) -> list[int]:
    scores = [sum(a * b for a, b in zip(row, query, strict=True)) for row in rows]
    return sorted(range(len(rows)), key=lambda i: -scores[i])[:k]


@pytest.mark.parametrize(
    ("rows", "nonzero"),
    [
        (50, 8),  # small: the plain loop
        (PURE_PYTHON_WORK // 8 + 500, 8),  # large and sparse: the column product
        (PURE_PYTHON_WORK // 64 + 500, 64),  # large and dense: the full product
    ],
)
def test_every_path_ranks_like_the_reference(rows: int, nonzero: int) -> None:
    rng = random.Random(rows)
    dim = 64
    matrix = [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(rows)]
    used = rng.sample(range(dim), nonzero)
    query = unit([rng.gauss(0, 1) if i in used else 0.0 for i in range(dim)])
    blob = array("f", [v for row in matrix for v in row]).tobytes()
    got = top_cosines(blob, rows, dim, query, 10)
    assert [i for i, _ in got] == reference(matrix, query, 10)
    expected = reference(matrix, query, 1)[0]
    want = sum(a * b for a, b in zip(matrix[expected], query, strict=True))
    assert got[0][1] == pytest.approx(want, abs=1e-5)


def test_vectors_of_another_dimension_are_never_compared() -> None:
    blob = array("f", [1.0, 0.0] * 3).tobytes()
    assert top_cosines(blob, 3, 2, [1.0, 0.0, 0.0], 2) == []
    assert top_cosines(blob, 3, 2, [0.0, 0.0], 2) == []
