"""What every embedder provider shares: the runtime error, the extras check, and the lazily loaded local
model (normalization is `tether.embed.normalize`)."""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

from tether.embed import Vector
from tether.errors import ConfigError, TetherError


class EmbedderError(TetherError):
    """An embedder that was configured correctly failed at run time (endpoint down, timeout, bad reply)."""


def installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it (so checking costs nothing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_extra(spec: str, module: str, extra: str) -> None:
    """Raise ConfigError naming the extra to install when `module` is not importable."""
    if not installed(module):
        raise ConfigError(
            f"embedder {spec!r} needs the Python package {module!r}, which is not installed: "
            f"pip install 'tether[{extra}]'"
        )


def offline_environment() -> None:
    """Keep Hugging Face libraries off the network and quiet, before they are first imported.

    They read these variables once, at import; a value the user set explicitly is left alone. The loaders
    also pass `local_files_only`, so even a library imported earlier without them never downloads.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def missing_library(embedder_id: str, extra: str, exc: ImportError) -> ConfigError:
    """The error for a model library that fails to import; `extra` is both its name and tether's extra."""
    return ConfigError(f"embedder {embedder_id!r} needs {extra} ({exc}): pip install 'tether[{extra}]'")


class LazyModel:
    """A local model, loaded once on first use (or by `load`); the lock keeps threads from loading it twice.

    Subclasses give `_load` (import the library, return the model) and `_embed` (a non-empty batch).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    def load(self) -> None:
        """Import the model library and load the model now rather than on the first `embed`."""
        with self._lock:
            if self._model is None:
                self._model = self._load()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        self.load()
        return self._embed(list(texts))

    def _load(self) -> Any:
        raise NotImplementedError

    def _embed(self, texts: list[str]) -> list[Vector]:
        raise NotImplementedError
