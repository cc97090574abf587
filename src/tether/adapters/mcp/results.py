"""What the MCP tools answer: one TypedDict per result shape (their JSON schemas are the tools' output
schemas), and the functions that shape memories into them."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from typing_extensions import TypedDict  # pydantic needs it for nested TypedDicts before Python 3.12

from tether.model.memory import to_dict

if TYPE_CHECKING:
    from tether.model.memory import Memory
    from tether.workspace import Workspace


class Hit(TypedDict):
    id: str
    summary: str
    category: str
    origin: str  # user | agent | distilled | seed | rules:<path>: who wrote it
    score: float
    receipt: str  # which signals fired: "file, text 0.67, sem 0.41"
    # "strong": it would pass the injection's evidence gate; "weak": only the nearest there is.
    confidence: Literal["strong", "weak"]
    has_details: bool


class SearchResult(TypedDict):
    results: list[Hit]
    hint: str


class Brief(TypedDict):
    id: str
    summary: str
    category: str
    status: str


class Full(TypedDict):
    id: str
    summary: str
    details: str
    category: str
    scope: str
    files: list[str]
    anchors: list[dict[str, Any]]  # path, symbol or lines, within, fingerprint, lost
    links: list[str]
    tags: list[str]
    aliases: list[str]
    pinned: bool
    priority: str
    origin: str
    status: str
    supersedes: str | None
    superseded_by: list[str]
    created: str
    updated: str
    note: str | None  # the markdown file holding it, relative to the repository root when inside it


class AddResult(TypedDict):
    id: str
    created: bool  # False: the same knowledge was already saved, and that memory is returned
    status: str  # of the memory returned: an existing one may be archived or superseded
    summary: str
    category: str
    scope: str
    files: list[str]
    anchors: list[str]  # `path::Symbol` or `path:120-140`
    message: str


class Changed(TypedDict):
    id: str
    summary: str
    status: str
    pinned: bool
    message: str


class Neighbour(TypedDict):
    file: str
    changes_with: str  # the memory's file that `file` often changes with
    confidence: float
    memories: list[Brief]


class Links(TypedDict):
    id: str
    summary: str
    links_to: list[Brief]
    linked_from: list[Brief]
    files: list[str]
    co_change: list[Neighbour]


def brief(memory: Memory) -> Brief:
    return {"id": memory.id, "summary": memory.summary, "category": memory.category, "status": memory.status}


def search_result(
    ws: Workspace, query: str, *, files: list[str], category: str | None, limit: int
) -> SearchResult:
    """What memory_search answers: the best matches with their receipts and confidence, and a hint. The
    server runs it in process, or the resident process over its open index (`tether.resident.answers`)."""
    hits: list[Hit] = [
        {
            "id": r.memory.id,
            "summary": r.memory.summary,
            "category": r.memory.category,
            "origin": r.memory.origin,
            "score": round(r.score, 4),
            "receipt": r.receipt,
            "confidence": r.confidence,
            "has_details": bool(r.memory.details),
        }
        for r in ws.search(query, limit=limit, category=category, files=files)
    ]
    if not hits:
        hint = "no memory matched: try other words or fewer of them; memory_add saves what you learn"
    elif all(h["confidence"] == "weak" for h in hits):
        hint = "no strong match: these are only the nearest memories; memory_get <id> returns one in full"
    else:
        hint = "memory_get <id> returns a memory's full text"
    return {"results": hits, "hint": hint}


def full(ws: Workspace, memory: Memory) -> Full:
    """Everything about one memory, with the memories that replaced it and where its note is."""
    data = to_dict(memory)
    note = ws.store.note_path(memory.id)
    if note is not None and ws.root is not None:
        with suppress(ValueError):  # a user-scope note lives outside the repository
            note = Path(note).relative_to(ws.root).as_posix()
    newer = [m.id for m in ws.chain(memory) if m.supersedes == memory.id]
    out = {key: data[key] for key in Full.__annotations__ if key in data}
    out.update(superseded_by=newer, note=note)
    return cast(Full, out)


def changed(memory: Memory, message: str) -> Changed:
    """The answer of a tool that changed one memory's status or pin."""
    return {
        "id": memory.id,
        "summary": memory.summary,
        "status": memory.status,
        "pinned": memory.pinned,
        "message": message,
    }
