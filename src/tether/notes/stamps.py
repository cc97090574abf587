"""The note directories' stamps: what lets a process trust the index without a stat of every note.

A note written, renamed or deleted changes its directory's mtime, so a process that finds the directories'
mtimes as the index last recorded them (`STAMPS`) knows that no note came or went since, for the cost of one
`stat` per directory. Two things keep the record honest:

- *tether's own writes* (`kept_in_step`, around every note the write path writes or deletes, under the
  writer lock): the writer indexes its note itself, so when the index was in step with the directories
  before the write, it still is after it, and the record moves on with the write. Without that, every
  memory added made the next hook scan every note (88-375 ms at 10,000 notes).
- *the scan of every note* (`SCANNED`: when any process last did one, and how many notes it saw): what an
  editor saving a note in place needs, since that may leave the directory's mtime alone (many editors
  replace the file instead, which does change it). A session start asks when the last one was
  (`tether.lifecycle.background`).

What it cannot see: another program writing a note in the same tick of the file system's clock as a
tether write between that write's two looks at the directory (microseconds), or one saving in place. The
next scan of every note finds both.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

# The note directories' mtimes when the index was last in step with them ("," between directories).
STAMPS = "notes.dir_stamps"
# "<time.time_ns()> <notes seen>" of the last scan of every note, by any process.
SCANNED = "notes.scanned"


class _Meta(Protocol):
    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


def dir_stamps(directories: Sequence[Path | None]) -> str:
    """The directories' mtimes, in order ("-" for one that is not there).

    >>> dir_stamps([None])
    '-'
    """
    stamps = []
    for directory in directories:
        try:
            stamps.append(str(directory.stat().st_mtime_ns) if directory else "-")
        except OSError:
            stamps.append("-")
    return ",".join(stamps)


@contextmanager
def kept_in_step(store: _Meta, directories: Sequence[Path | None]) -> Iterator[None]:
    """Around a write of tether's own that writes or deletes a note and indexes it (the writer lock held):
    if the index was in step with `directories` before, record their stamps after. Recorded after the
    index has the note, so a write killed between the two leaves an old record: the next sync scans."""
    before = dir_stamps(directories)
    yield
    if store.get_meta(STAMPS) == before:
        store.set_meta(STAMPS, dir_stamps(directories))


def record_scan(store: _Meta, notes: int) -> None:
    store.set_meta(SCANNED, f"{time.time_ns()} {notes}")


def last_scan(store: _Meta) -> tuple[float, int] | None:
    """(seconds since the last scan of every note, the notes it saw), or None if none is recorded."""
    raw = (store.get_meta(SCANNED) or "").split()
    try:
        at, notes = int(raw[0]), int(raw[1])
    except (IndexError, ValueError):
        return None
    return (time.time_ns() - at) / 1e9, notes
