"""The dependency-free default embedder (DESIGN §7): feature hashing, no model, no network.

Its words are `tether.model.text`'s: the same stopwords and identifier parts full-text search uses.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence

from tether.embed.base import Vector, normalize
from tether.model.text import STOPWORDS, identifier_parts

_WORD_RE = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
# Feature weights: a whole word says the most, an identifier part (`getUserName` → get, user, name) a
# little less, and character trigrams only smooth over spelling variants (plurals, inflections).
_WORD_WEIGHT = 1.0
_PART_WEIGHT = 0.6
_GRAM_WEIGHT = 0.25


def features(text: str) -> dict[str, float]:
    """The weighted bag of features the hashed embedder hashes. Exposed for tests and explanations."""
    bag: dict[str, float] = {}
    for raw in _WORD_RE.findall(text):
        if not (raw[0].isalnum() or raw[0] == "_"):
            continue
        word = raw.lower()
        if word in STOPWORDS or len(word) < 2:
            continue
        bag["w:" + word] = bag.get("w:" + word, 0.0) + _WORD_WEIGHT
        parts = identifier_parts(raw)
        if len(parts) > 1:
            for part in parts:
                if len(part) > 1 and part not in STOPWORDS:
                    bag["p:" + part] = bag.get("p:" + part, 0.0) + _PART_WEIGHT
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            gram = "g:" + padded[i : i + 3]
            bag[gram] = bag.get(gram, 0.0) + _GRAM_WEIGHT
    return bag


class HashedEmbedder:
    """Deterministic feature-hashing embedder: no model, no network, the same vector on every machine.

    Crude on purpose: it captures shared words and identifiers, not meaning. Recall treats its cosine
    below 0.3 as noise (see `tether.recall.scoring`).

    >>> HashedEmbedder().embed(["retry the upload"])[0][:2]  # doctest: +SKIP
    """

    def __init__(self, dimension: int = 384) -> None:
        self._dimension = dimension

    @property
    def id(self) -> str:
        # v2: the stopwords are the full-text ones (v1 kept its own, shorter list).
        return f"hashed-v2-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> Vector:
        vector = [0.0] * self._dimension
        for feature, weight in features(text).items():
            # Sublinear term frequency: a word repeated ten times is not ten times as topical.
            value = 1.0 + math.log(weight) if weight > 1.0 else weight
            h = zlib.crc32(feature.encode())
            sign = 1.0 if h & 0x80000000 else -1.0
            vector[h % self._dimension] += sign * value
        return normalize(vector)
