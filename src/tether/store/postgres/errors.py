"""psycopg's exceptions as tether's: callers of the store never see (or import) psycopg.

As in `tether.store.sqlite.errors`: a server that cannot be reached, refuses the connection, is shutting
down, is out of disk or connections, or gave up on a lock or a serialization conflict is
`StoreUnavailable` (retry or fix the environment; nothing is damaged). Damage reported by the server
itself (SQLSTATE class XX: corrupt data or index) and a schema missing what its migrations made is
`StoreDamaged`. Nothing local is ever moved or rebuilt because of the team database: its damage is for
its administrator. Programming errors (a bad statement, a broken constraint) are left as they are.
"""

from __future__ import annotations

from typing import TypeVar

import psycopg
from psycopg import errors as pg

from tether.errors import StoreDamaged, StoreUnavailable
from tether.store.base import translating_errors

T = TypeVar("T")

_UNAVAILABLE: tuple[type[Exception], ...] = (
    psycopg.OperationalError,  # connection refused or lost, timeouts, admin shutdown, pool timeout
    pg.InsufficientPrivilege,
    pg.ReadOnlySqlTransaction,
    pg.InsufficientResources,  # disk full, out of memory, too many connections
    pg.LockNotAvailable,
    pg.TransactionRollback,  # serialization failures and deadlocks: retry
    psycopg.InterfaceError,  # the connection was closed under us
)
_DAMAGED: tuple[type[Exception], ...] = (
    pg.DataCorrupted,  # XX001
    pg.IndexCorrupted,  # XX002
    pg.UndefinedTable,
    pg.UndefinedColumn,
)


def translate(exc: psycopg.Error, where: str = "the team database") -> Exception:
    """The tether error for `exc`, or `exc` itself when it is a programming error."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, _DAMAGED):
        return StoreDamaged(
            f"{where} reports damage or a missing table ({message}): ask its administrator to check it "
            "(`tether store status`); the notes in this checkout are intact"
        )
    if isinstance(exc, _UNAVAILABLE):
        return StoreUnavailable(
            f"{where} is unavailable ({message}): retry; if it persists check the server and the URL "
            "(`tether store status`), or unset TETHER_DATABASE_URL to work on the local index"
        )
    return exc


# Class decorator: every public method raises tether's store errors instead of psycopg's.
translating = translating_errors(psycopg.Error, translate)
