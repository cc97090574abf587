"""`tether store copy`: every memory and the event log from one store to another (SQLite ⇄ Postgres).

Memories go across whole (any status; session memory is ephemeral and stays), each written with the
target's own rules (a shared store keeps a newer row it already has). The event log is replayed oldest
first, which rebuilds the telemetry counters exactly, since they are derived from the same events; it is
copied only into a target whose log for this tenant is empty, so copying twice never doubles a count.
Vectors are derived data: the target embeds what lacks a vector of `embedder`, rather than trust
vectors of a space it cannot check.

The round trip is exact: export, copy to Postgres, copy back into an empty checkout, export again: the
two exports are byte for byte the same (`tests/test_store_transfer.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tether.model.memory import Memory
from tether.store.base import EventLog, MemoryStore, Query, SearchIndex

# Rows embedded per batch: what `tether.notes.sync` uses too.
BATCH = 256
EVERY_EVENT = 1 << 62


class Source(MemoryStore, EventLog, Protocol):
    """What is read: memories and the event log."""


class Target(MemoryStore, SearchIndex, EventLog, Protocol):
    """What is written: memories, vectors and events."""


class Embeds(Protocol):
    """An embedder (`tether.embed.base.Embedder`, a layer above the stores), as far as a copy uses one."""

    @property
    def id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass
class CopyReport:
    memories: int = 0
    kept_newer: int = 0  # the target had a newer version, and kept it
    events: int = 0
    events_skipped: bool = False  # the target already had an event log for this tenant
    embedded: int = 0


def copy(
    source: Source,
    target: Target,
    *,
    embedder: Embeds | None = None,
    write: Callable[[Memory], object] | None = None,
) -> CopyReport:
    """Copy `source`'s memories and events into `target`. `write` writes one memory (a workspace's
    `write`, so a copy into a checkout makes its notes too); by default `target.put`."""
    report = CopyReport()
    memories = [m for m in source.find(Query(status=None)) if m.scope != "session"]
    with target.transaction():
        for memory in memories:
            if write is not None:
                write(memory)
            else:
                target.put(memory)
            stored = target.get(memory.id)
            if stored is not None and stored.updated > memory.updated:
                report.kept_newer += 1
            else:
                report.memories += 1
        if next(iter(target.events(None, limit=1)), None) is None:
            events = list(source.events(None, limit=EVERY_EVENT))
            events.reverse()  # newest first out of the log; replayed oldest first
            target.record(events)
            report.events = len(events)
        else:
            report.events_skipped = True
    if embedder is not None:
        missing = target.missing_vectors(embedder.id)
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            vectors = embedder.embed([m.text for m in batch])
            target.put_vectors(embedder.id, [(m.id, v) for m, v in zip(batch, vectors, strict=True)])
            report.embedded += len(batch)
    return report
