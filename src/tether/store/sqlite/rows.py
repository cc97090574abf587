"""Rows of the SQLite index's `memories` table as `Memory` records, and `Query` as a WHERE clause."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from tether.model.anchor import Anchor
from tether.model.memory import Memory
from tether.model.timestamps import parse_iso
from tether.store.base import Query

COLUMNS = (
    "id",
    "summary",
    "details",
    "category",
    "scope",
    "files",
    "priority",
    "pinned",
    "origin",
    "supersedes",
    "status",
    "session",
    "created",
    "updated",
    "content_hash",
    "anchors",
    "tags",
    "aliases",
)


def where(query: Query) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    # Rows named by id or by file are few: they are looked up by key, and status and scope only filter them
    # (`+column` keeps the planner off their index, which without statistics it prefers, walking every
    # active memory: 13 ms instead of 0.1 for a read hook's gotchas at 10k memories).
    plus = "+" if query.ids is not None or query.file is not None else ""
    if query.status is not None:
        clauses.append(f"{plus}status IN ({','.join('?' * len(query.status))})")
        params.extend(query.status)
    for column in ("category", "scope", "session", "supersedes"):
        value = getattr(query, column)
        if value is not None:
            clauses.append(f"{plus if column == 'scope' else ''}{column} = ?")
            params.append(value)
    if query.origin is not None:
        if query.origin.endswith(":"):
            clauses.append("origin LIKE ? ESCAPE '\\'")
            params.append(query.origin.replace("%", "\\%").replace("_", "\\_") + "%")
        else:
            clauses.append("origin = ?")
            params.append(query.origin)
    if query.pinned is not None:
        # A literal, not a parameter: only then can the planner use the partial index on pinned rows.
        clauses.append(f"pinned = {int(query.pinned)}")
    if query.file is not None:
        clauses.append("rowid IN (SELECT memory_rowid FROM file_refs WHERE path = ?)")
        params.append(query.file)
    if query.ids is not None:
        clauses.append(f"id IN ({','.join('?' * len(query.ids))})")
        params.extend(query.ids)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def memory_of(row: Sequence[Any]) -> Memory:
    """The `Memory` of a row of `COLUMNS` (recall reads a few hundred of them per prompt: no dict per row)."""
    (mid, summary, details, category, scope, files, priority, pinned, origin, supersedes, status, session,
     created, updated, stored_hash, anchors, tags, aliases) = row  # fmt: skip
    made = dt(created) or datetime.now(UTC)
    memory = Memory(
        id=mid,
        summary=summary,
        details=details,
        category=category,
        scope=scope,
        files=() if files == "[]" else tuple(json.loads(files)),
        priority=priority,
        pinned=bool(pinned),
        origin=origin,
        supersedes=supersedes,
        status=status,
        session=session,
        created=made,
        # Most memories were never edited: one parse for both (datetimes are immutable).
        updated=made if updated == created and created else (dt(updated) or datetime.now(UTC)),
        anchors=() if anchors == "[]" else tuple(Anchor.from_front(a) for a in json.loads(anchors)),
        tags=() if tags == "[]" else tuple(json.loads(tags)),
        aliases=() if aliases == "[]" else tuple(json.loads(aliases)),
    )
    # The stored hash is the one computed at write time from the same text: spare recomputing it.
    memory.__dict__["content_hash"] = stored_hash
    return memory


def chunks(items: Sequence[Any], size: int = 500) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def dt(value: str | None) -> datetime | None:
    if not value:
        return None
    return parse_iso(value)
