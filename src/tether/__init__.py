"""tether: code-aware memory for coding agents. The library's public API is what `__all__` names.

    >>> from tether import Workspace  # doctest: +SKIP
    >>> ws = Workspace.open(Path("."))  # doctest: +SKIP

Loaded lazily (PEP 562): importing a submodule (a hook's entry point) does not import the workspace and
its dependencies. This package may import every layer below it; only the adapters and `__main__` import it.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing `typing` (and `importlib`) costs a hook's thin client as much as
# its whole answer (`tether.resident.client`); mypy reads any constant of this name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from tether.anchors.locations import Location
    from tether.errors import (
        ConfigError,
        NoProjectError,
        NoteError,
        NotFoundError,
        SecretError,
        StoreDamaged,
        StoreError,
        StoreUnavailable,
        TetherError,
        ValidationError,
    )
    from tether.memories import Added
    from tether.model.anchor import Anchor
    from tether.model.memory import Memory
    from tether.recall.evidence import Recalled, RecallResult
    from tether.store.base import Event, Query
    from tether.workspace import Workspace

__version__ = "0.1.0"

_WHERE = {
    "Added": "tether.memories",
    "Anchor": "tether.model.anchor",
    "ConfigError": "tether.errors",
    "Event": "tether.store.base",
    "Location": "tether.anchors.locations",
    "Memory": "tether.model.memory",
    "NoProjectError": "tether.errors",
    "NotFoundError": "tether.errors",
    "NoteError": "tether.errors",
    "Query": "tether.store.base",
    "RecallResult": "tether.recall.evidence",
    "Recalled": "tether.recall.evidence",
    "SecretError": "tether.errors",
    "StoreDamaged": "tether.errors",
    "StoreError": "tether.errors",
    "StoreUnavailable": "tether.errors",
    "TetherError": "tether.errors",
    "ValidationError": "tether.errors",
    "Workspace": "tether.workspace",
}
__all__ = [
    "Added",
    "Anchor",
    "ConfigError",
    "Event",
    "Location",
    "Memory",
    "NoProjectError",
    "NotFoundError",
    "NoteError",
    "Query",
    "RecallResult",
    "Recalled",
    "SecretError",
    "StoreDamaged",
    "StoreError",
    "StoreUnavailable",
    "TetherError",
    "ValidationError",
    "Workspace",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
