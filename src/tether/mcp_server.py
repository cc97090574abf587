"""The MCP server (DESIGN §5): six memory tools over stdio or streamable HTTP, a thin adapter over `Workspace`.

Short results with ids from `memory_search`; the full text only from `memory_get`. The handshake never waits
on the index or an embedding model: the workspace opens on the first tool call and is kept, re-synced from
the notes (incrementally) on every call.

    $ python -m tether.mcp_server            # stdio, what agents spawn
    $ python -m tether.mcp_server --http     # streamable HTTP on http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import AliasChoices, Field
from typing_extensions import TypedDict  # pydantic needs it for nested TypedDicts before Python 3.12

from tether.errors import TetherError, ValidationError

if TYPE_CHECKING:
    from tether.memory import Memory
    from tether.repomap import RepoMap
    from tether.workspace import Workspace

log = logging.getLogger("tether.mcp")

NAME = "tether"
# Sent with the handshake on every connection: short, so it costs the agent's context almost nothing.
INSTRUCTIONS = (
    "tether is this repository's memory: preferences, decisions, gotchas and context learned in earlier "
    "sessions, tied to the files they are about. Call memory_search before working on unfamiliar code or "
    "when the answer may already be known; memory_get <id> for a memory's full text; memory_add to save "
    "a durable fact (one per call) once you learn it."
)
# The co-change neighbours shown per file by memory_links, as recall uses (DESIGN §4: ≤ 2 per file).
NEIGHBOURS_PER_FILE = 2
# Files of one memory whose neighbours are looked up: a memory naming 40 files is about a directory.
NEIGHBOUR_FILES = 10
# Key in the session state (index `sessions` table) saying the agent has used the memory tools itself,
# so hooks can go quiet (DESIGN §5: "silence once the agent is using the memory tools itself").
SESSION_KEY = "memory_tools"
LOOPBACK_NAMES = ("localhost",)
# Where an agent tells its MCP servers which session they serve: Claude Code sets CLAUDE_CODE_SESSION_ID to
# the session_id its hooks receive (2.1.332, measured in tests/e2e). Without it memory_get's "acted" and the
# tools-used mark belong to no session. TETHER_SESSION, set by the user, wins.
AGENT_SESSION_VARS = ("CLAUDE_CODE_SESSION_ID",)

Category = Literal["pref", "decision", "gotcha", "context"]
Scope = Literal["project", "user", "session"]

# Argument aliases models habitually guess; the schema shows the first name of each, the rest are accepted.
MemoryId = Annotated[
    str,
    Field(
        validation_alias=AliasChoices("id", "memory_id", "memoryId"),
        description="Memory id: 8 hex characters, as returned by memory_search",
    ),
]
Files = Annotated[
    list[str] | str | None,
    Field(
        validation_alias=AliasChoices("files", "file", "path", "paths"),
        description="Repository paths (relative to the root, or absolute inside it); a path ending in / is a directory",
    ),
]


# -- results --------------------------------------------------------------------------------------


class Hit(TypedDict):
    id: str
    summary: str
    category: str
    score: float
    receipt: str  # which signals fired: "file, text 0.67, sem 0.41"
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
    links: list[str]
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
    summary: str
    category: str
    scope: str
    files: list[str]
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


# -- the workspace, opened on first use -----------------------------------------------------------


class Memories:
    """The workspace for one server, opened on the first tool call and kept; one call at a time.

    Sync tool handlers run in worker threads and may overlap, while the workspace's SQLite connection is
    one per process: the lock makes each call one step, which also keeps read-modify-write honest.
    """

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd.resolve()
        self._ws: Workspace | None = None
        self._lock = threading.Lock()
        self._repo_refreshed = False

    @contextmanager
    def use(self) -> Iterator[Workspace]:
        """The workspace, synced with the notes; core errors become tool errors the model can act on."""
        with self._lock:
            try:
                ws = self._open()
                self._mark_session(ws)
                yield ws
            except TetherError as exc:
                raise ToolError(for_agent(str(exc))) from exc
            except sqlite3.OperationalError as exc:  # a lock held past the busy timeout, a full disk
                raise ToolError(
                    f"the memory index is unavailable ({exc}): retry; if it persists run `tether doctor`"
                ) from exc
            except sqlite3.DatabaseError as exc:  # not a database at all, or a damaged one
                # Without this the SDK answers a bare "Error executing tool", which agents read as a
                # schema problem. The index is derived from the notes, so removing it loses no memory.
                raise ToolError(
                    f"the memory index .tether/index.db is damaged ({exc}): delete it and call again; "
                    "it is rebuilt from the notes in .tether/memories/ and no memory is lost"
                ) from exc

    def _open(self) -> Workspace:
        from tether.project import find_project_root
        from tether.workspace import Workspace

        # `tether init` may run after the server started: follow the project root when it changes.
        if self._ws is not None and self._ws.root != find_project_root(self.cwd):
            self._ws.close()
            self._ws = None
        if self._ws is None:
            self._ws = Workspace.open(self.cwd, require_project=False)
            self._repo_refreshed = False
        else:
            self._ws.sync()
        return self._ws

    def _mark_session(self, ws: Workspace) -> None:
        session = agent_session()
        if session is None:
            return
        # One write transaction, like the hooks' own updates: in Claude Code the hooks of a parallel tool
        # call write this session's state at the same time, and neither may lose the other's change.
        with ws.store.transaction():
            state = ws.store.session_state(session) or {}
            previous = state.get(SESSION_KEY)
            used: dict[str, Any] = previous if isinstance(previous, dict) else {}
            now = ws.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            state[SESSION_KEY] = {
                "first": used.get("first", now),
                "last": now,
                "calls": int(used.get("calls", 0)) + 1,
            }
            ws.store.put_session_state(session, state, ws.clock())

    def repo(self, ws: Workspace) -> RepoMap | None:
        """The repo map, brought up to date once per server process (incremental after the first time)."""
        if ws.root is None:
            return None
        try:
            from tether.repomap import RepoMap
        except ImportError:  # the repo map is optional for links
            return None
        repo = RepoMap.open(ws.root, ws.store.conn)
        if not self._repo_refreshed:
            self._repo_refreshed = True
            try:
                repo.refresh()
            except (TetherError, OSError) as exc:
                log.warning("repo map refresh failed: %s", exc)
        return repo

    def close(self) -> None:
        with self._lock:
            if self._ws is not None:
                self._ws.close()
                self._ws = None


def agent_session() -> str | None:
    """The session this server serves: TETHER_SESSION, else the id the agent put in the environment."""
    from tether.workspace import environ_session

    return environ_session() or next(
        (os.environ[name] for name in AGENT_SESSION_VARS if os.environ.get(name)), None
    )


# Core messages name CLI flags; the agent talks to tool arguments instead.
_AGENT_WORDING = (
    (
        "or pass --allow-secret if it is not a real secret",
        "the user can add it with `tether add --allow-secret` if it is not a real secret",
    ),
    ("put the rest in --details (or pipe it with --details -)", "put the rest in `details`"),
    ("put the rest in --details", "put the rest in `details`"),
    ("or use --scope user", 'or use scope="user"'),
    (
        "needs a session id (--session)",
        'needs a session id: set TETHER_SESSION in the server\'s environment, or use scope="project"',
    ),
    ("`tether list --all` shows every id", "memory_search finds ids"),
    ("as shown by `tether list`", "as returned by memory_search"),
)


def for_agent(message: str) -> str:
    for cli, tool in _AGENT_WORDING:
        message = message.replace(cli, tool)
    return message


# -- shaping results ------------------------------------------------------------------------------


def _brief(memory: Memory) -> Brief:
    return {"id": memory.id, "summary": memory.summary, "category": memory.category, "status": memory.status}


def _full(ws: Workspace, memory: Memory) -> Full:
    from tether.workspace import to_dict

    data = to_dict(memory)
    note = ws.store.note_path(memory.id)
    if note is not None and ws.root is not None:
        with suppress(ValueError):  # a user-scope note lives outside the repository
            note = Path(note).relative_to(ws.root).as_posix()
    newer = [m.id for m in ws.chain(memory) if m.supersedes == memory.id]
    full = {key: data[key] for key in Full.__annotations__ if key in data}
    full.update(superseded_by=newer, note=note)
    return cast(Full, full)


def _paths(files: list[str] | str | None) -> list[str]:
    """One path, a list, or a comma-separated string (models send all three)."""
    if files is None:
        return []
    items = [files] if isinstance(files, str) else files
    out: list[str] = []
    for item in items:
        out.extend(part.strip() for part in item.split(",") if part.strip())
    return out


# -- the server -----------------------------------------------------------------------------------


def build_server(cwd: Path) -> MCPServer:
    """The MCP server for the project at (or above) `cwd`. Nothing is opened until the first tool call.

    >>> build_server(Path(".")).run()  # doctest: +SKIP
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        tether_version = version("tether")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        tether_version = "0"

    memories = Memories(cwd)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            memories.close()

    server = MCPServer(
        NAME, version=tether_version, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )

    @server.tool(
        structured_output=True,
        title="Search project memory",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    def memory_search(
        query: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("query", "q", "text", "search"),
                description="What you want to know, in words, or a symbol or file name",
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
        """Search the project's memory (preferences, decisions, gotchas, context). Returns one line per
        memory with its id and why it matched; call memory_get for the full text. Pass `files` to favour
        memories about the files you are working on."""
        paths = _paths(files)
        if not query.strip() and not paths:
            raise ToolError(
                "query is empty: say what you want to know, or pass `files` to find memories about them"
            )
        with memories.use() as ws:
            found = ws.search(query, limit=limit, category=category, files=paths)
            hits: list[Hit] = [
                {
                    "id": r.memory.id,
                    "summary": r.memory.summary,
                    "category": r.memory.category,
                    "score": round(r.score, 4),
                    "receipt": r.receipt,
                    "has_details": bool(r.memory.details),
                }
                for r in found
            ]
        hint = (
            "memory_get <id> returns a memory's full text"
            if hits
            else "no memory matched: try other words or fewer of them; memory_add saves what you learn"
        )
        return {"results": hits, "hint": hint}

    @server.tool(
        structured_output=True,
        title="Read one memory",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    def memory_get(id: MemoryId) -> Full:
        """The full text of one memory (details, files, links, status, what it supersedes). Archived and
        superseded memories are still readable here."""
        with memories.use() as ws:
            memory = ws.ack(id, session=agent_session(), via="memory_get")
            return _full(ws, memory)

    @server.tool(
        structured_output=True,
        title="Save a memory",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    def memory_add(
        summary: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("summary", "text", "content", "title"),
                description="One line, at most 160 characters: the fact itself, as it should be shown later",
            ),
        ],
        details: Annotated[
            str,
            Field(
                validation_alias=AliasChoices("details", "body"),
                description="Markdown: the why, examples, [[id]] links",
            ),
        ] = "",
        category: Annotated[
            Category,
            Field(
                description="pref (how the user wants things), decision (and why), gotcha (a trap), context"
            ),
        ] = "context",
        files: Files = None,
        scope: Annotated[
            Scope,
            Field(
                description="project (shared with the repo), user (follows the person), session (this session only)"
            ),
        ] = "project",
        pinned: Annotated[bool, Field(description="Always recalled; use sparingly")] = False,
        supersedes: Annotated[
            str | None, Field(description="Id of a memory this one replaces; the old one leaves recall")
        ] = None,
    ) -> AddResult:
        """Save one durable fact about this project: a preference, a decision, a gotcha or context. Saving
        the same text twice returns the existing memory. Tie it to the files it is about."""
        with memories.use() as ws:
            added = ws.add(
                summary,
                details=details,
                category=category,
                files=_paths(files),
                scope=scope,
                pinned=pinned,
                origin="agent",
                supersedes=supersedes,
                session=agent_session() if scope == "session" else None,
            )
        m = added.memory
        message = f"saved {m.id}" if added.created else f"already saved as {m.id}; nothing new was written"
        if added.created and m.supersedes:
            message += f"; it supersedes {m.supersedes}"
        return {
            "id": m.id,
            "created": added.created,
            "summary": m.summary,
            "category": m.category,
            "scope": m.scope,
            "files": list(m.files),
            "message": message,
        }

    @server.tool(
        structured_output=True,
        title="Archive a memory",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    def memory_remove(
        id: MemoryId,
        reason: Annotated[str, Field(description="Why it is wrong or obsolete (kept in the log)")] = "",
    ) -> Changed:
        """Archive a memory that is wrong or obsolete: it leaves search and recall but is kept, and can be
        restored (`tether restore <id>`). To replace a memory with a corrected one, prefer memory_add with
        `supersedes`."""
        with memories.use() as ws:
            memory = ws.archive(id, reason or "memory_remove")
        return {
            "id": memory.id,
            "summary": memory.summary,
            "status": memory.status,
            "pinned": memory.pinned,
            "message": f"archived {memory.id}; `tether restore {memory.id}` brings it back",
        }

    @server.tool(
        structured_output=True,
        title="Links of a memory",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    def memory_links(id: MemoryId) -> Links:
        """What a memory is connected to: memories it links to and that link to it ([[wikilinks]]), the
        files it is about, and memories on files that often change together with those."""
        with memories.use() as ws:
            memory = ws.get(id)
            outgoing, incoming = ws.links(memory)
            co_change: list[Neighbour] = []
            repo = memories.repo(ws)
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
                                "memories": [_brief(m) for m in found],
                            }
                        )
        return {
            "id": memory.id,
            "summary": memory.summary,
            "links_to": [_brief(m) for m in outgoing],
            "linked_from": [_brief(m) for m in incoming],
            "files": list(memory.files),
            "co_change": co_change,
        }

    @server.tool(
        structured_output=True,
        title="Pin or unpin a memory",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    def memory_pin(
        id: MemoryId,
        pinned: Annotated[bool, Field(description="true to pin, false to unpin")] = True,
    ) -> Changed:
        """Pin a memory so it is always recalled, above the statistics (or unpin it). For what the user
        insists on; pinning many memories makes each one count for less."""
        with memories.use() as ws:
            memory = ws.pin(id, pinned)
        return {
            "id": memory.id,
            "summary": memory.summary,
            "status": memory.status,
            "pinned": memory.pinned,
            "message": f"{'pinned' if memory.pinned else 'unpinned'} {memory.id}",
        }

    return server


def check_loopback(host: str) -> str:
    """`host` if it is a loopback address; the HTTP server has no authentication, so nothing else is allowed."""
    if host in LOOPBACK_NAMES:
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ValidationError(
        f"refusing to listen on {host!r}: the MCP server has no authentication, so it binds to loopback only; "
        "use 127.0.0.1, ::1 or localhost (and a tunnel such as ssh -L to reach it from elsewhere)"
    )


def run(cwd: Path, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the memory tools: over stdio (default) or streamable HTTP at http://host:port/mcp."""
    if not http:
        build_server(cwd).run()
        return
    from mcp.server.transport_security import TransportSecuritySettings

    check_loopback(host)
    # Loopback alone does not stop a web page from reaching the server through DNS rebinding: only
    # requests whose Host (and Origin, when a browser sends one) name a loopback address are served.
    # The SDK turns this on by itself for three spellings of loopback only; 127.0.0.2 deserves it too.
    names = sorted({"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host})
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )
    build_server(cwd).run("streamable-http", host=host, port=port, transport_security=security)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tether.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="Serve streamable HTTP instead of stdio.")
    parser.add_argument("--host", default="127.0.0.1", help="Loopback address to listen on (with --http).")
    parser.add_argument("--port", type=int, default=8765, help="Port to listen on (with --http).")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), help="Directory inside the project.")
    args = parser.parse_args(argv)
    try:
        run(args.cwd, http=args.http, host=args.host, port=args.port)
    except TetherError as exc:
        parser.exit(2, f"tether mcp: {exc}\n")


if __name__ == "__main__":
    main()
