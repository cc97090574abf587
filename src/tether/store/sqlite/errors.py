"""SQLite's exceptions as tether's: callers of the store never see (or import) `sqlite3`.

A lock held past the busy timeout, a full disk or a read-only directory is `StoreUnavailable` (wait or
fix the environment; nothing is damaged); a file that is not a database or whose pages are corrupt is
`StoreDamaged`. Programming errors (a wrong statement, a constraint the code should have kept) are left
as they are: they are bugs, not conditions to handle.
"""

from __future__ import annotations

import sqlite3
from typing import TypeVar

from tether.errors import StoreDamaged, StoreUnavailable
from tether.store.base import translating_errors

T = TypeVar("T")
_DAMAGE_WORDS = ("malformed", "not a database", "no such table", "no such column", "corrupt")


def translate(exc: sqlite3.Error, where: str = "the memory index") -> Exception:
    """The tether error for `exc`, or `exc` itself when it is a programming error."""
    message = str(exc)
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError):
        return exc
    if any(word in message for word in _DAMAGE_WORDS) or type(exc) is sqlite3.DatabaseError:
        return StoreDamaged(
            f"{where} is damaged ({message}): it is rebuilt from the notes by the next `tether` command "
            "(or delete it); no memory is lost"
        )
    return StoreUnavailable(f"{where} is unavailable ({message}): {_advice(message)}")


def _advice(message: str) -> str:
    """What to do about an unavailable index, by what SQLite said."""
    text = message.lower()
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return (
            "its directory (.tether/) must be writable: check the mount and permissions; the notes are intact"
        )
    if "full" in text or "disk i/o" in text:
        return "check the free space on the disk (df) and retry; the notes are intact"
    return "retry; if it persists, check the disk and `tether doctor`"


# Class decorator: every public method raises tether's store errors instead of sqlite3's.
translating = translating_errors(sqlite3.Error, translate)
