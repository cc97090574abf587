"""Rows of `tether_memories` as tether's types, and the SQL fragments the store builds queries from.

Nothing here talks to the database: it turns a `Memory` into the values a row holds (its search text
folded and weighted, its vector as pgvector's text form) and a row back into a `Memory`.

>>> fold("Café naïve")
'Cafe naive'
>>> vector_literal([0.5, -1.0])
'[0.5,-1.0]'
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg import sql

from tether.model.anchor import Anchor
from tether.model.memory import Memory
from tether.store.base import Query
from tether.store.postgres.tenancy import Tenant

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
    "tags",
    "aliases",
    "anchors",
)
SELECT = sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS)
# The rows a workspace may see (`tether.store.postgres.tenancy`): its project's and its user's.
VISIBLE = sql.SQL("project = ANY(%(projects)s) AND owner = ANY(%(owners)s)")
# ts_rank's weights, in the order D, C, B, A: summary (A) 1.0, file words (B) 0.5, details (D) 0.25 —
# the 4 : 2 : 1 the SQLite index's bm25 weighs its columns with (summary is what a person wrote to say
# what the memory is about).
RANK_WEIGHTS = "{0.25, 0.25, 0.5, 1.0}"


def tenant_params(tenant: Tenant) -> dict[str, Any]:
    return {"projects": tenant.projects, "owners": tenant.owners}


def fold(text: str) -> str:
    """`text` without diacritics (NFKD, combining marks dropped): what `unicode61 remove_diacritics` does."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def files_text(files: Sequence[str]) -> str:
    """Paths as words (`src/up_load.py` → `src up load py`), as the SQLite index indexes them."""
    return " ".join(p.replace("/", " ").replace(".", " ").replace("_", " ") for p in files)


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def like_pattern(needle: str) -> str:
    """A LIKE pattern matching `needle` anywhere, its wildcards taken literally."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(UTC) if moment is not None else None


def memory(row: Sequence[Any]) -> Memory:
    data = dict(zip(COLUMNS, row, strict=True))
    found = Memory(
        id=data["id"],
        summary=data["summary"],
        details=data["details"],
        category=data["category"],
        scope=data["scope"],
        files=tuple(data["files"]),
        priority=data["priority"],
        pinned=bool(data["pinned"]),
        origin=data["origin"],
        supersedes=data["supersedes"],
        status=data["status"],
        session=data["session"],
        created=data["created"].astimezone(UTC),
        updated=data["updated"].astimezone(UTC),
        tags=tuple(data["tags"]),
        aliases=tuple(data["aliases"]),
        anchors=()
        if data["anchors"] == "[]"
        else tuple(Anchor.from_front(a) for a in json.loads(data["anchors"])),
    )
    # The stored hash was computed at write time from the same text: spare recomputing it.
    found.__dict__["content_hash"] = data["content_hash"]
    return found


def where(query: Query, params: dict[str, Any]) -> sql.Composable:
    """The WHERE clause (visibility included) for `query`; its values are added to `params`."""
    clauses: list[sql.Composable] = [VISIBLE]
    if query.status is not None:
        clauses.append(sql.SQL("status = ANY(%(status)s)"))
        params["status"] = list(query.status)
    for column in ("category", "scope", "session", "supersedes"):
        value = getattr(query, column)
        if value is not None:
            clauses.append(sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(column)))
            params[column] = value
    if query.origin is not None:
        if query.origin.endswith(":"):
            clauses.append(sql.SQL("starts_with(origin, %(origin)s)"))
        else:
            clauses.append(sql.SQL("origin = %(origin)s"))
        params["origin"] = query.origin
    if query.pinned is not None:
        clauses.append(sql.SQL("pinned") if query.pinned else sql.SQL("NOT pinned"))
    if query.file is not None:
        clauses.append(sql.SQL("files @> ARRAY[%(file)s]::text[]"))
        params["file"] = query.file
    if query.ids is not None:
        clauses.append(sql.SQL("id = ANY(%(ids)s)"))
        params["ids"] = list(query.ids)
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses)
