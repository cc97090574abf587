"""The workspace behind the MCP server, opened on the first tool call, and the session the server serves.

No MCP SDK at import: the resident process uses `mark_tools_used` when it answers a tool.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import StoreDamaged, StoreUnavailable, TetherError, explain_os_error

if TYPE_CHECKING:
    from tether.repo.map import RepoMap
    from tether.workspace import Workspace

log = logging.getLogger("tether.mcp")

# Key in the session state (index `sessions` table) saying the agent has used the memory tools itself,
# so hooks can go quiet (DESIGN §5: "silence once the agent is using the memory tools itself").
SESSION_KEY = "memory_tools"
# Where an agent tells its MCP servers which session they serve: Claude Code sets CLAUDE_CODE_SESSION_ID to
# the session_id its hooks receive (2.1.332, measured in tests/e2e). Without it memory_get's "acted" and the
# tools-used mark belong to no session. TETHER_SESSION, set by the user, wins.
AGENT_SESSION_VARS = ("CLAUDE_CODE_SESSION_ID",)
NO_PROJECT = "no tether project here: run `tether init` in the repository (or pass --project)"

# Asks the project's resident process to run a read tool: (the server's cwd, the tool, its arguments, the
# session) -> the tool's answer, or None when no process answered (the server then runs it itself).
# `tether.__main__` passes one (`tether.resident.client.tool`): this adapter never imports the resident.
Remote = Callable[[Path, str, Mapping[str, Any], "str | None"], "dict[str, Any] | None"]


class Memories:
    """The workspace for one server, opened on the first tool call and kept; one call at a time.

    Sync tool handlers run in worker threads and may overlap, while the workspace's SQLite connection is
    one per process: the lock makes each call one step, which also keeps read-modify-write honest.
    """

    def __init__(self, cwd: Path, remote: Remote | None = None) -> None:
        self.cwd = cwd.resolve()
        self.remote = remote
        self._ws: Workspace | None = None
        self._lock = threading.Lock()
        self._repo_refreshed = False

    def through_resident(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """`tool`'s answer from the project's resident process (its index, caches and model kept warm;
        it marks the session's tool use too), or None: then the caller answers in process, as without one."""
        if self.remote is None:
            return None
        try:
            return self.remote(self.cwd, tool, arguments, agent_session())
        except Exception as exc:  # the resident is an optimization: never the reason a tool fails
            log.warning("the resident process did not answer %s: %r", tool, exc)
            return None

    @contextmanager
    def use(self, *, require_project: bool = True) -> Iterator[Workspace]:
        """The workspace, synced with the notes; core errors become tool errors the model can act on.

        Without a project, a call says so instead of answering from user memory alone (an empty answer
        would read as "nothing is known"); only what targets user memory explicitly goes ahead.
        """
        from mcp.server.mcpserver.exceptions import ToolError

        with self._lock:
            try:
                if require_project:
                    self._require_project()
                ws = self._open()
                self._mark_session(ws)
                yield ws
            except StoreUnavailable as exc:  # a lock held past the busy timeout, a full disk, read-only
                raise ToolError(for_agent(str(exc))) from exc  # it says what SQLite said and what to do
            except StoreDamaged as exc:  # not a database at all, or a damaged one
                # Without this the SDK answers a bare "Error executing tool", which agents read as a
                # schema problem. The index is derived from the notes, so removing it loses no memory.
                raise ToolError(
                    f"the memory index .tether/index.db is damaged ({exc.__cause__ or exc}): delete it and call "
                    "again; it is rebuilt from the notes in .tether/memories/ and no memory is lost"
                ) from exc
            except TetherError as exc:
                raise ToolError(for_agent(str(exc))) from exc
            except OSError as exc:  # a full disk, a read-only file system: tell the agent, keep serving
                raise ToolError(explain_os_error(exc)) from exc

    def _require_project(self) -> None:
        from mcp.server.mcpserver.exceptions import ToolError

        from tether.project import find_project_root

        if find_project_root(self.cwd) is None:
            raise ToolError(f"{NO_PROJECT}; looked from {self.cwd}")

    def _open(self) -> Workspace:
        from tether.project import find_project_root
        from tether.workspace import Workspace

        # `tether init` may run after the server started: follow the project root when it changes.
        if self._ws is not None and self._ws.root != find_project_root(self.cwd):
            self._ws.close()
            self._ws = None
        if self._ws is None:
            self._ws = Workspace.open(self.cwd, require_project=False, warm=True)
            self._repo_refreshed = False
            for ignored in self._ws.config.ignored:
                log.warning("%s", ignored.message())
        else:
            from tether.notes.sync import FRESH_SECONDS

            self._ws.sync(fresh_within=FRESH_SECONDS)  # one stat per note directory, not one per note
        return self._ws

    def _mark_session(self, ws: Workspace) -> None:
        mark_tools_used(ws, agent_session())

    def repo(self, ws: Workspace) -> RepoMap | None:
        """The repo map, brought up to date once per server process (incremental after the first time).

        As every CLI command does, memories follow the renames the refresh finds (their notes are
        rewritten): a refresh that dropped them would mark the commits read, and the renames were lost."""
        from tether.lifecycle.housekeeping import refresh_repo

        if ws.root is None:
            return None
        if not self._repo_refreshed:
            self._repo_refreshed = True
            try:
                moved = refresh_repo(ws).renamed
            except (TetherError, OSError) as exc:
                log.warning("repo map refresh failed: %s", exc)
            else:
                for memory_id, old, new in moved:
                    log.info("memory %s now names %s (renamed from %s)", memory_id, new, old)
        return ws.repo_map()

    def close(self) -> None:
        with self._lock:
            if self._ws is not None:
                self._ws.close()
                self._ws = None


def mark_tools_used(ws: Workspace, session: str | None) -> None:
    """Record in `session`'s state that its agent uses the memory tools itself (the hooks go quiet)."""
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
