"""Domain exceptions. The core raises these; only the adapters turn them into exit codes or tool errors."""

from __future__ import annotations


class TetherError(Exception):
    """Base for every error tether reports to a person. The message says what was wrong and what to do."""


class ValidationError(TetherError):
    """A field of a memory (or an argument) is invalid; nothing was written."""


class SecretError(ValidationError):
    """Memory text looks like a credential; refused unless explicitly allowed."""


class NotFoundError(TetherError):
    """No memory (or other record) with the given id."""


class NoProjectError(TetherError):
    """No `.tether/` directory was found for the current directory."""


class NoteError(TetherError):
    """A markdown note could not be parsed; it is skipped, never rewritten."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class ConfigError(TetherError):
    """A configuration key or value is invalid."""


class StoreError(TetherError):
    """The memory index (or another store) failed; the notes, the source of truth, are untouched."""


class StoreUnavailable(StoreError):
    """The store cannot answer now (held by another process past the timeout, disk full, read-only):
    nothing is damaged, and nothing may be moved or rebuilt because of it."""


class StoreDamaged(StoreError):
    """The store's file is not a database or fails its integrity check: the index is rebuilt from the notes."""
