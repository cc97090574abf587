"""Static embedding models (model2vec's format): a vector per token, a text's vector is their mean.

A static model is a table, not a network: embedding a query is a tokenizer pass and a few hundred row
additions, well under a millisecond, so a hook embeds its own query in process (no warm process, no model
library). The table is a model2vec directory: `model.safetensors` (an `embeddings` tensor, one row per token
id, float32, float16 or int8), a WordPiece `tokenizer.json` and `config.json`. It is read with the standard
library (`struct` rows from a memory map); numpy, already a dependency, does big batches.

tether ships one (`static`, DESIGN §7): all-MiniLM-L6-v2 distilled by `benchmarks/distill_static.py`.

    >>> StaticEmbedder.packaged().embed(["how does tool execution work"])[0][:2]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether.embed.base import Vector
from tether.embed.wordpiece import WordPiece
from tether.errors import ConfigError
from tether.model.text import STOPWORDS

# The model tether ships, in the package (see `data/minilm-static/README.md` for what it is and its licence).
PACKAGED_DIR = Path(__file__).resolve().parent / "data" / "minilm-static"
PACKAGED_ID = "static:minilm-l6-128i8"
# A static vector is an average, so the words every text has pull every two texts together: on
# benchmarks/quality/meaning.py "how do tools work in this project" was nearer a memory about imports and
# tests (0.64) than to "Tool execution uses runTool" (0.54), and off-topic questions reached 0.36. Leaving
# out full-text search's stopwords gives 0.56 against 0.32 at most, hit@1 0.48 -> 0.56, and off-topic
# questions fall to 0.23 (punctuation left out too changed nothing there: it stays).
PACKAGED_SKIP = STOPWORDS
_DTYPES = {"F32": ("f", 4, "float32"), "F16": ("e", 2, "float16"), "I8": ("b", 1, "int8")}
# Past this many tokens in one call, numpy (~60 ms to import) costs less than summing rows in Python
# (~3 us a row); a hook's query is a few dozen tokens and never pays for numpy.
NUMPY_TOKENS = 20_000


class Table:
    """The `embeddings` tensor of a `model.safetensors` file, memory-mapped (read a row at a time)."""

    def __init__(self, path: Path) -> None:
        try:
            with open(path, "rb") as handle:
                size = struct.unpack("<Q", handle.read(8))[0]
                header = json.loads(handle.read(size))
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            entry = header["embeddings"]
            code, width, self.dtype = _DTYPES[entry["dtype"]]
            rows, dim = (int(n) for n in entry["shape"])
            begin, end = (int(n) for n in entry["data_offsets"])
        except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
            raise ConfigError(f"cannot read the static model {path}: {type(exc).__name__}: {exc}") from exc
        self.offset = 8 + size + begin
        if end - begin != rows * dim * width or self.offset + rows * dim * width > len(self._map):
            raise ConfigError(f"the static model {path} is truncated or damaged: reinstall it")
        self.rows, self.dim, self._width = rows, dim, width
        self._row = struct.Struct(f"<{dim}{code}")
        # What identifies the table's content cheaply: its shape, type and the first and last rows.
        self.fingerprint = hashlib.sha256(
            json.dumps(entry, sort_keys=True).encode() + self.raw_row(0) + self.raw_row(rows - 1)
        ).hexdigest()[:8]

    def raw_row(self, index: int) -> bytes:
        start = self.offset + index * self.dim * self._width
        return self._map[start : start + self.dim * self._width]

    def row(self, index: int) -> tuple[float, ...]:
        values: tuple[float, ...] = self._row.unpack_from(
            self._map, self.offset + index * self.dim * self._width
        )
        return values

    def matrix(self) -> Any:
        """The whole table as a numpy array (a view of the map, no copy)."""
        import numpy as np

        count = self.rows * self.dim
        return np.frombuffer(self._map, dtype=self.dtype, count=count, offset=self.offset).reshape(
            self.rows, self.dim
        )


class StaticEmbedder:
    """An embedder over a model2vec directory: mean of the token rows, L2-normalized (model2vec's `encode`).

    Loads lazily (the table is mapped, the vocabulary read, on the first `embed`); `dimension` reads only
    the file's header. Unknown tokens are dropped, as model2vec drops them; a text with no known token
    embeds to zeros (it matches nothing).
    """

    def __init__(
        self, directory: str | Path, *, name: str | None = None, skip: frozenset[str] = frozenset()
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.skip = skip
        weights = self.directory / "model.safetensors"
        if not weights.is_file() or not (self.directory / "tokenizer.json").is_file():
            raise ConfigError(
                f"{str(self.directory)!r} is not a static model directory: it needs model.safetensors and "
                "tokenizer.json (a model2vec model, or one benchmarks/distill_static.py wrote)"
            )
        self._table = Table(weights)
        self._id = f"static:{name}" if name else f"model2vec:{self.directory.name}@{self._table.fingerprint}"
        self._lock = threading.Lock()
        self._tokenizer: WordPiece | None = None

    @classmethod
    def packaged(cls) -> StaticEmbedder:
        """The model tether ships (spec `static`)."""
        return cls(PACKAGED_DIR, name=PACKAGED_ID.removeprefix("static:"), skip=PACKAGED_SKIP)

    @property
    def id(self) -> str:
        return self._id

    @property
    def dimension(self) -> int:
        return self._table.dim

    @property
    def tokenizer(self) -> WordPiece:
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = WordPiece.from_file(self.directory / "tokenizer.json", skip=self.skip)
            return self._tokenizer

    def token_ids(self, text: str) -> list[int]:
        tokenizer = self.tokenizer
        return [i for i in tokenizer.ids(text) if i != tokenizer.unk_id and 0 <= i < self._table.rows]

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        ids = [self.token_ids(text) for text in texts]
        if sum(map(len, ids)) > NUMPY_TOKENS or ("numpy" in sys.modules and len(texts) > 1):
            return self._embed_numpy(ids)
        return [self._embed_python(one) for one in ids]

    def _embed_python(self, ids: list[int]) -> Vector:
        total = [0.0] * self._table.dim
        for index in ids:
            total = [a + b for a, b in zip(total, self._table.row(index), strict=True)]
        norm = math.sqrt(sum(v * v for v in total))
        return [v / norm for v in total] if norm > 0.0 else total

    def _embed_numpy(self, ids: list[list[int]]) -> list[Vector]:
        import numpy as np

        matrix = self._table.matrix()
        out = np.zeros((len(ids), self._table.dim), dtype=np.float64)
        for row, one in enumerate(ids):
            if one:
                out[row] = matrix[np.asarray(one, dtype=np.int64)].sum(axis=0, dtype=np.float64)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        vectors: list[Vector] = out.tolist()
        return vectors
