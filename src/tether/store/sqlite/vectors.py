"""Nearest neighbours over the index's float32 vectors: a cache file beside the index, and the cosine top-k.

A hook runs in a fresh process on every prompt: reading ten thousand embedding rows each time would cost
more than the query. So the active vectors of one embedder are packed into one file (`index.db-vectors-
<embedder>`), memory-mapped, and rewritten when a memory changed: its header holds the index's identity (a
random id made with the database, so a deleted and rebuilt index never trusts an old file) and the version
counter every write bumps.

    >>> top_cosines(array("f", [1, 0, 0, 1]).tobytes(), 2, 2, [1.0, 0.0], 1)
    [(0, 1.0)]
"""

from __future__ import annotations

import contextlib
import heapq
import json
import mmap
import os
import sqlite3
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import mul
from pathlib import Path
from typing import Any

# Below this many multiply-adds a column loop in plain Python (~0.05 us each) costs less than importing
# numpy (~60 ms), which matters in a hook process that runs on every prompt: hashed query vectors are
# sparse, so 10k memories take ~290k multiply-adds (~15 ms). A warm process, or one that already imported
# numpy, uses numpy (~1 ms at 10k).
PURE_PYTHON_WORK = 1_000_000


def load(
    conn: sqlite3.Connection, index: Path, embedder: str, identity: str
) -> tuple[list[str], bytes | memoryview, int]:
    """Every active memory's `embedder` vector: ids, one packed float32 buffer, the dimension.

    From the cache file while its header matches `identity` (index id and write version), else from the
    rows, rewriting the file (a read-only or full disk only costs the next reader the same query)."""
    cache = index.with_name(f"{index.name}-vectors-{_safe(embedder)}")
    try:
        with open(cache, "rb") as handle:
            header = json.loads(handle.readline())
            if header.get("identity") == identity and header.get("embedder") == embedder:
                start = handle.tell()
                if os.fstat(handle.fileno()).st_size == start:
                    return list(header["ids"]), b"", int(header["dim"])
                # Mapped, not read: numpy multiplies straight from the page cache, no copy.
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                return list(header["ids"]), memoryview(mapped)[start:], int(header["dim"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    ids: list[str] = []
    blobs: list[bytes] = []
    dim = 0
    for mid, size, blob in conn.execute(
        "SELECT m.id, e.dim, e.vector FROM embeddings e JOIN memories m ON m.rowid = e.memory_rowid"
        " WHERE e.embedder = ? AND m.status = 'active'",
        (embedder,),
    ):
        ids.append(mid)
        blobs.append(blob)
        dim = size
    packed = b"".join(blobs)
    header_line = json.dumps({"identity": identity, "embedder": embedder, "dim": dim, "ids": ids}).encode()
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(header_line + b"\n" + packed)
        os.replace(tmp, cache)
    except OSError:
        # A full disk leaves no half-written cache behind (a crash's is swept by the next sync).
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return ids, packed, dim


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def top_cosines(
    blob: bytes | memoryview,
    rows: int,
    dim: int,
    query: Sequence[float],
    k: int,
    *,
    warm: bool = False,
    columns: Callable[[], Any] | None = None,
) -> list[tuple[int, float]]:
    """The `k` best (row, cosine) of `query` against a packed float32 matrix of L2-normalized rows.

    A one-shot process (a hook, a CLI command) computes small products in plain Python and never imports
    numpy; a `warm` process, one that will ask again, imports numpy once and is faster from then on.
    `columns`: gives the matrix column by column (`transposed`), which a process keeps for a sparse query."""
    if len(query) != dim or rows == 0:
        return []  # a vector from another embedder: never compare across spaces
    nonzero = [(i, q) for i, q in enumerate(query) if q]
    if not nonzero:
        return []
    if rows * len(nonzero) <= PURE_PYTHON_WORK and not warm and "numpy" not in sys.modules:
        return top_cosines_python(blob, rows, dim, nonzero, k)
    by_column = columns() if columns is not None and is_sparse(nonzero, dim) else None
    return top_cosines_numpy(blob, rows, dim, nonzero, k, columns=by_column)


def is_sparse(nonzero: Sequence[tuple[int, float]], dim: int) -> bool:
    """Whether a query multiplies only its own columns (the hashed embedder's, a few dozen of 384)."""
    return len(nonzero) * 4 <= dim


def top_cosines_python(
    blob: bytes | memoryview, rows: int, dim: int, nonzero: Sequence[tuple[int, float]], k: int
) -> list[tuple[int, float]]:
    """`top_cosines` without numpy: one strided column per non-zero query dimension, summed per row."""
    flat = memoryview(blob).cast("B").cast("f")
    columns = [flat[i : rows * dim : dim] for i, _ in nonzero]
    weights = [q for _, q in nonzero]
    scores = [sum(map(mul, values, weights)) for values in zip(*columns, strict=True)]
    best = heapq.nlargest(k, range(rows), key=scores.__getitem__)
    return [(i, scores[i]) for i in best]


def top_cosines_numpy(
    blob: bytes | memoryview,
    rows: int,
    dim: int,
    nonzero: Sequence[tuple[int, float]],
    k: int,
    *,
    columns: Any = None,
) -> list[tuple[int, float]]:
    """`top_cosines` with numpy; a sparse query (the hashed embedder's) multiplies only its columns,
    taken from `columns` (`transposed`) when given: 0.1 ms at 10k memories instead of 2.5 ms of reading
    a few floats from every row."""
    import numpy as np

    matrix = np.frombuffer(blob, dtype=np.float32, count=rows * dim).reshape(rows, dim)
    weights = np.asarray([q for _, q in nonzero], dtype=np.float32)
    if is_sparse(nonzero, dim):
        picked = [i for i, _ in nonzero]
        # `columns[picked].T` is laid out as `matrix[:, picked]` is (column-major, fresh), and holds the
        # same floats: the product is the same bit for bit (BLAS sums in an order that follows the layout).
        product = (columns[picked].T if columns is not None else matrix[:, picked]) @ weights
    else:
        dense = np.zeros(dim, dtype=np.float32)
        dense[[i for i, _ in nonzero]] = weights
        product = matrix @ dense
    count = min(k, rows)
    head = np.argpartition(-product, count - 1)[:count]
    return [(int(i), float(product[i])) for i in head[np.argsort(-product[head])]]


@dataclass
class Loaded:
    """One embedder's active vectors as `load` read them at the index version `identity`: kept by a process
    until the next write, with the matrix by column once a sparse query asked for it (a warm process)."""

    embedder: str
    identity: str
    ids: list[str]
    blob: bytes | memoryview
    dim: int
    _columns: Any = None

    def held(self) -> dict[str, int]:
        return {
            "vectors": memoryview(self.blob).nbytes,
            "columns": 0 if self._columns is None else self._columns.nbytes,
        }

    def columns(self) -> Any:
        if self._columns is None:
            self._columns = transposed(self.blob, len(self.ids), self.dim)
        return self._columns


def transposed(blob: bytes | memoryview, rows: int, dim: int) -> Any:
    """The matrix column by column (`dim` x `rows`, C order), copied in blocks of rows that stay in cache
    (one numpy transpose strides through all of memory: 90 ms at 10k memories, blocks 9 ms)."""
    import numpy as np

    matrix = np.frombuffer(blob, dtype=np.float32, count=rows * dim).reshape(rows, dim)
    out = np.empty((dim, rows), dtype=np.float32)
    for start in range(0, rows, _TRANSPOSE_BLOCK):
        out[:, start : start + _TRANSPOSE_BLOCK] = matrix[start : start + _TRANSPOSE_BLOCK].T
    return out


# A copy by column beyond this many bytes is not kept (100k memories of 384 floats: 154 MB).
COLUMNS_MAX_BYTES = 256 << 20
# Rows per block of `transposed`: 512 rows of 384 floats are 768 KB, in cache both ways.
_TRANSPOSE_BLOCK = 512


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
