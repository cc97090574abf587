"""The six memory tools of the MCP server: their arguments (with the aliases models guess), descriptions,
annotations and bodies. Each body is one `Memories.use()` step over the workspace."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import AliasChoices, Field

from tether.adapters.mcp.memories import Memories, agent_session
from tether.adapters.mcp.results import (
    AddResult,
    Changed,
    Full,
    Links,
    Neighbour,
    SearchResult,
    brief,
    changed,
    full,
    search_result,
)
from tether.lifecycle.review import request_pin
from tether.memories import Added
from tether.model.display import printable_data
from tether.model.limits import DETAILS_MAX, QUERY_MAX, REASON_MAX

# The co-change neighbours shown per file by memory_links, as recall uses (DESIGN §4: ≤ 2 per file).
NEIGHBOURS_PER_FILE = 2
# Files of one memory whose neighbours are looked up: a memory naming 40 files is about a directory.
NEIGHBOUR_FILES = 10

Category = Literal["pref", "decision", "gotcha", "context"]
Scope = Literal["project", "user", "session"]

# Argument aliases models habitually guess; the schema shows the first name of each, the rest are accepted.
MemoryId = Annotated[
    str,
    Field(
        validation_alias=AliasChoices("id", "memory_id", "memoryId"),
        description="Memory id: 8 hex characters, as returned by memory_search, or an unambiguous prefix of 4+",
        max_length=64,
    ),
]
Files = Annotated[
    list[str] | str | None,
    Field(
        validation_alias=AliasChoices("files", "file", "path", "paths"),
        description="Repository paths (relative to the root, or absolute inside it); a path ending in / is a directory",
    ),
]


def _paths(files: list[str] | str | None) -> list[str]:
    """One path, a list, or a comma-separated string (models send all three)."""
    if files is None:
        return []
    items = [files] if isinstance(files, str) else files
    out: list[str] = []
    for item in items:
        out.extend(part.strip() for part in item.split(",") if part.strip())
    return out


F = TypeVar("F", bound=Callable[..., Any])


def _shown(func: F) -> F:
    """Memory text is data: a tool's answer has its control characters shown, not obeyed (`tether.model.display`)."""

    @functools.wraps(func)
    def answer(*args: Any, **kwargs: Any) -> Any:
        return printable_data(func(*args, **kwargs))

    return cast(F, answer)


def _added_message(added: Added, newer: list[str]) -> str:
    """What memory_add says: saved, or where the same knowledge already is (and whether it is recalled)."""
    m = added.memory
    if added.pending:
        return (
            f"not saved yet: it waits for the user's approval (`tether review`) because "
            f"{'; '.join(added.pending)}. It is not recalled until approved; to save it now, add it without "
            "that (not pinned, project scope, or without `supersedes`)"
        )
    if added.created:
        return f"saved {m.id}" + (f"; it supersedes {m.supersedes}" if m.supersedes else "")
    if m.status == "archived":
        return (
            f"already saved as {m.id}, but archived: it is not recalled. The user archived it or it went "
            f"unused; if it is right again, ask the user to run `tether restore {m.id}`"
        )
    if m.status == "superseded":
        by = ", ".join(newer) or "a newer memory"
        return f"already saved as {m.id}, superseded by {by}: that one is what is recalled"
    return f"already saved as {m.id}; nothing new was written"


def _read_only() -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def _writes(*, destructive: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=True, open_world_hint=False
    )


def register_tools(server: MCPServer, memories: Memories) -> None:
    """Add the memory tools to `server`, each working on the workspace `memories` opens on first use."""

    @server.tool(structured_output=True, title="Search project memory", annotations=_read_only())
    @_shown
    def memory_search(
        query: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("query", "q", "text", "search"),
                description="What you want to know, in words, or a symbol or file name",
                max_length=QUERY_MAX,
            ),
        ],
        files: Files = None,
        category: Annotated[Category | None, Field(description="Only memories of this category")] = None,
        limit: Annotated[
            int,
            Field(
                ge=1,
                le=50,
                validation_alias=AliasChoices("limit", "k", "top_k", "n"),
                description="At most this many results",
            ),
        ] = 10,
    ) -> SearchResult:
        """Search the project's memory (preferences, decisions, gotchas, context). Returns the best matches,
        one line per memory with its id, why it matched and its confidence (`strong`, or `weak`: only the
        nearest there is); call memory_get for the full text. Pass `files` to favour memories about the
        files you are working on."""
        paths = _paths(files)
        if not query.strip() and not paths:
            raise ToolError(
                "query is empty: say what you want to know, or pass `files` to find memories about them"
            )
        arguments = {"query": query, "files": paths, "category": category, "limit": limit}
        answered = memories.through_resident("memory_search", arguments)
        if answered is not None:
            return cast(SearchResult, answered)
        with memories.use() as ws:
            return search_result(ws, query, files=paths, category=category, limit=limit)

    @server.tool(structured_output=True, title="Read one memory", annotations=_read_only())
    @_shown
    def memory_get(id: MemoryId) -> Full:
        """The full text of one memory (details, files, links, status, what it supersedes). Archived and
        superseded memories are still readable here."""
        answered = memories.through_resident("memory_get", {"id": id})
        if answered is not None:
            return cast(Full, answered)
        with memories.use() as ws:
            memory = ws.ack(ws.resolve(id), session=agent_session(), via="memory_get")
            return full(ws, memory)

    @server.tool(structured_output=True, title="Save a memory", annotations=_writes(destructive=False))
    @_shown
    def memory_add(
        summary: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("summary", "text", "content", "title"),
                description="One line, at most 160 characters: the fact itself, as it should be shown later",
                max_length=DETAILS_MAX,  # past 160 the core says how to shorten it; this stops a flood
            ),
        ],
        details: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("details", "body"),
                description="Markdown: the why, examples, [[id]] links",
                max_length=DETAILS_MAX,
            ),
        ] = "",
        category: Annotated[
            Category,
            Field(
                description="pref (how the user wants things), decision (and why), gotcha (a trap), context"
            ),
        ] = "context",
        files: Files = None,
        at: Annotated[
            list[str] | str | None,
            Field(
                validation_alias=AliasChoices("at", "anchors", "anchor"),
                description="Places inside files it is about: a symbol (src/pay.py::charge_card, "
                "src/pay.py::Charger.charge) or lines (src/pay.py:120-140); an unknown symbol is an error "
                "listing the file's symbols",
            ),
        ] = None,
        scope: Annotated[
            Scope,
            Field(
                description="project (shared with the repo), user (follows the person; asks the user first), session (this session only)"
            ),
        ] = "project",
        pinned: Annotated[
            bool,
            Field(
                description="Always recalled; only the user can pin, so this asks them first (tether review)"
            ),
        ] = False,
        supersedes: Annotated[
            str | None,
            Field(description="Id (or unambiguous prefix) of a memory this one replaces; it leaves recall"),
        ] = None,
    ) -> AddResult:
        """Save one durable fact about this project: a preference, a decision, a gotcha or context. Saving
        the same text twice returns the existing memory. Tie it to the files it is about, and with `at` to
        the function or lines it is about: it is then shown first when an edit lands there."""
        with memories.use(require_project=scope != "user") as ws:
            added = ws.add(
                summary,
                details=details,
                category=category,
                files=_paths(files),
                at=_paths(at),
                scope=scope,
                pinned=pinned,
                origin="agent",
                supersedes=ws.resolve(supersedes) if supersedes else None,
                session=agent_session() if scope == "session" else None,
            )
            newer = [n.id for n in ws.chain(added.memory) if n.supersedes == added.memory.id]
        m = added.memory
        message = _added_message(added, newer)
        return {
            "id": m.id,
            "created": added.created,
            "status": "pending" if added.pending else m.status,
            "summary": m.summary,
            "category": m.category,
            "scope": m.scope,
            "files": list(m.files),
            "anchors": [a.spec() for a in m.anchors],
            "message": message,
        }

    @server.tool(structured_output=True, title="Archive a memory", annotations=_writes(destructive=True))
    @_shown
    def memory_remove(
        id: MemoryId,
        reason: Annotated[
            str, Field(description="Why it is wrong or obsolete (kept in the log)", max_length=REASON_MAX)
        ] = "",
    ) -> Changed:
        """Archive a memory that is wrong or obsolete: it leaves search and recall but is kept, and can be
        restored (`tether restore <id>`). To replace a memory with a corrected one, prefer memory_add with
        `supersedes`."""
        with memories.use() as ws:
            memory = ws.archive(ws.resolve(id), reason or "memory_remove")
        return changed(memory, f"archived {memory.id}; `tether restore {memory.id}` brings it back")

    @server.tool(structured_output=True, title="Links of a memory", annotations=_read_only())
    @_shown
    def memory_links(id: MemoryId) -> Links:
        """What a memory is connected to: memories it links to and that link to it ([[wikilinks]]), the
        files it is about, and memories on files that often change together with those."""
        with memories.use() as ws:
            repo = memories.repo(ws)  # first: it may rewrite this memory's files (renames)
            memory = ws.get(ws.resolve(id))
            outgoing, incoming = ws.links(memory)
            co_change: list[Neighbour] = []
            if repo is not None:
                for path in [f for f in memory.files if not f.endswith("/")][:NEIGHBOUR_FILES]:
                    for other, confidence in repo.neighbours(path, NEIGHBOURS_PER_FILE):
                        if other in memory.files:
                            continue
                        owners = ws.store.owners([other]).get(other, [])
                        found = [m for mid in owners if mid != memory.id and (m := ws.store.get(mid))]
                        co_change.append(
                            {
                                "file": other,
                                "changes_with": path,
                                "confidence": round(confidence, 3),
                                "memories": [brief(m) for m in found],
                            }
                        )
        return {
            "id": memory.id,
            "summary": memory.summary,
            "links_to": [brief(m) for m in outgoing],
            "linked_from": [brief(m) for m in incoming],
            "files": list(memory.files),
            "co_change": co_change,
        }

    @server.tool(
        structured_output=True, title="Pin or unpin a memory", annotations=_writes(destructive=False)
    )
    @_shown
    def memory_pin(
        id: MemoryId,
        pinned: Annotated[bool, Field(description="true to pin, false to unpin")] = True,
    ) -> Changed:
        """Ask the user to pin a memory so it is always recalled, above the statistics (or to unpin it): the
        request waits for their approval (`tether review`). For what the user insists on."""
        with memories.use() as ws:
            # A pin is the user's veto over the statistics: an agent asks, the user decides.
            memory, asked = request_pin(ws, ws.resolve(id), pinned)
        if not asked:
            return changed(memory, f"{memory.id} is already {'pinned' if memory.pinned else 'unpinned'}")
        verb = "pin" if pinned else "unpin"
        return changed(
            memory, f"asked the user to {verb} {memory.id}: it waits for their approval (`tether review`)"
        )
