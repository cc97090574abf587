"""A function run in a thread beside the caller, its result or exception handed back (DESIGN §3: a refresh
lists the work tree and scans the changed files while its own thread reads history).

    listing = InThread(sorted, [3, 1, 2])   # started at once
    listing.result()                         # [1, 2, 3], once the thread is done
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class InThread(Generic[T]):
    """`fn(*args)` run in a daemon thread; `result()` waits for it and returns or raises what it did.

    The import scan reads files (the GIL is released while it waits on the disk) while the main thread
    waits on `git log`'s pipe: on a large history the two overlap instead of adding up."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        name = (
            f"tether-{getattr(fn, '__name__', 'work')}"  # (named: a test waits for a refresh's own threads)
        )
        self._thread = threading.Thread(target=self._run, args=(fn, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was
