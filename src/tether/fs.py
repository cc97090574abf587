"""`file_lock`: an advisory lock on a file, shared by every process of the machine that takes it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive `flock` on `path` (created if missing) for the `with` block.

    Yields True while held; with `wait=False`, yields False at once when another process holds it.
    Where `flock` does not exist (Windows) it yields True without locking.

    >>> with file_lock(Path(".tether/.lock")) as held:  # doctest: +SKIP
    ...     ...
    """
    if sys.platform == "win32":
        yield True
        return
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
