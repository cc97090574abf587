"""Embeddings: the `Embedder` protocol and the hashed default (light: hooks import this);
`providers` holds the real models (imported lazily), `warm` the per-project embedding process.

Imports only `tether.model` and `tether.errors` (the warm process also `tether.fs` and `tether.detach`).
"""

from tether.embed.base import Embedder, Vector, normalize
from tether.embed.hashed import HashedEmbedder

__all__ = ["Embedder", "HashedEmbedder", "Vector", "normalize"]
