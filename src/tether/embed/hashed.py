"""Embedders (DESIGN §7): the protocol and the dependency-free hashed default.

Vectors are lists of float32-representable floats, L2-normalized, so cosine similarity is a dot product.
Every vector is stored with its embedder's `id`; vectors from different ids are never compared.
"""

from __future__ import annotations

import math
import re
import zlib
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


_WORD_RE = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Feature weights: a whole word says the most, an identifier part (`getUserName` → get, user, name) a
# little less, and character trigrams only smooth over spelling variants (plurals, inflections).
_WORD_WEIGHT = 1.0
_PART_WEIGHT = 0.6
_GRAM_WEIGHT = 0.25
# Words too common in prose and code to say anything about a topic.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "can",
        "should",
        "would",
        "could",
        "use",
        "used",
        "using",
    ]
)


def identifier_parts(word: str) -> list[str]:
    """Split an identifier on underscores and case changes: `parse_HTTPHeader` → parse, http, header."""
    parts: list[str] = []
    for chunk in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL_RE.findall(chunk))
    return [p for p in parts if p]


def features(text: str) -> dict[str, float]:
    """The weighted bag of features the hashed embedder hashes. Exposed for tests and explanations."""
    bag: dict[str, float] = {}
    for raw in _WORD_RE.findall(text):
        if not (raw[0].isalnum() or raw[0] == "_"):
            continue
        word = raw.lower()
        if word in _STOPWORDS or len(word) < 2:
            continue
        bag["w:" + word] = bag.get("w:" + word, 0.0) + _WORD_WEIGHT
        parts = identifier_parts(raw)
        if len(parts) > 1:
            for part in parts:
                if len(part) > 1 and part not in _STOPWORDS:
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
        return f"hashed-v1-{self._dimension}"

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


def normalize(values: Sequence[float]) -> Vector:
    """L2-normalize; an all-zero vector stays all zeros (it has no direction to keep)."""
    vector = [float(v) for v in values]
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return vector
    return [v / norm for v in vector]
