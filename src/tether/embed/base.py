"""The embedder protocol (DESIGN §7).

Vectors are lists of float32-representable floats, L2-normalized, so cosine similarity is a dot product.
Every vector is stored with its embedder's `id`; vectors from different ids are never compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. `id` names the model (and its settings) so spaces are never mixed."""

    @property
    def id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def normalize(values: Sequence[float]) -> Vector:
    """L2-normalize; an all-zero vector stays all zeros (it has no direction to keep)."""
    vector = [float(v) for v in values]
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return vector
    return [v / norm for v in vector]
