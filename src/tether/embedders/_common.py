"""What every embedder provider shares: the runtime error, normalization, and the extras check."""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Sequence

from tether.embed import Vector
from tether.errors import ConfigError, TetherError


class EmbedderError(TetherError):
    """An embedder that was configured correctly failed at run time (endpoint down, timeout, bad reply)."""


def normalize(values: Sequence[float]) -> Vector:
    """L2-normalize; an all-zero vector stays all zeros (it has no direction to keep)."""
    vector = [float(v) for v in values]
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return vector
    return [v / norm for v in vector]


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
