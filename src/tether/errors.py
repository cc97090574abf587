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


def explain_os_error(exc: OSError) -> str:
    """What a failed file operation means for the person, and what to do: a full disk, a read-only file
    system or a permission are the machine's state, not a bug (the adapters print this, never a traceback).

    >>> explain_os_error(OSError(28, "No space left on device", "/r/.tether/memories/x.md"))
    'cannot write /r/.tether/memories/x.md: the disk is full: free some space and run it again (what was written before is intact; nothing was half-written)'
    """
    import errno

    where = f" {exc.filename}" if exc.filename else ""
    advice = {
        errno.ENOSPC: "the disk is full: free some space and run it again",
        errno.EDQUOT: "the disk quota is used up: free some space and run it again",
        errno.EFBIG: "the file size limit was reached (ulimit -f): raise it and run it again",
        errno.EROFS: "the file system is read-only: run it where tether can write, or remount it read-write",
        errno.EACCES: "permission denied: check the owner and mode of the file and its directory",
        errno.EPERM: "not permitted: check the owner and mode of the file and its directory",
        errno.EIO: "the disk reported an I/O error: check it (dmesg) before retrying",
    }.get(exc.errno or 0, f"{exc.strerror or exc}")
    return f"cannot write{where}: {advice} (what was written before is intact; nothing was half-written)"
