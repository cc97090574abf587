"""What the resident process answers: hook events and read commands, over one open workspace.

A hook is answered exactly as `tether.adapters.hooks` answers it in process (the same `parse`, `handle` and
`render`), against the workspace this process keeps open: the index's connection, its configuration and
whatever the workspace caches stay warm between requests. Before each request the workspace is brought up
to date as a hook's own would be (a light note sync: the note directories' mtimes), and it is opened again
when the index file or a configuration file changed (a rebuild, a recovered index, an edited config).
Between requests (`idle`), it checks every note (an editor's in-place save) in short slices and refreshes the
repo map every `WATCH_SECONDS`, so a command answered here misses no more than a hook does; then it runs the
lifecycle passes that are due (`tether.lifecycle.passes`), in slices too, so a session start answered here
never runs them.

Writes go through the workspace's own write path (the writer lock, the note first): an acknowledged write
is on disk whichever process made it.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.model.display import printable_data, safe_json
from tether.project import find_project_root
from tether.resident.client import command_body, reply_header
from tether.resident.server import encode, fallback
from tether.workspace import Workspace

if TYPE_CHECKING:
    from tether.lifecycle.passes import DuePasses

# The read commands answered here (`tether.__main__` sends these). Anything that edits notes, opens an
# editor or runs long stays in its own process.
READ_COMMANDS = ("search", "recall", "explain", "get", "list")
# The MCP tools answered here (`tether.resident.client.tool`): the ones that only read (memory_get records
# that it was read, through the same write path). What writes notes stays in the server's process.
READ_TOOLS = ("memory_search", "memory_get")
# How often, between requests, every note is checked (an in-place edit) and the repo map refreshed.
WATCH_SECONDS = 15.0
# The longest piece of that check at a time: what a request arriving during it waits (a whole pass over
# 10k notes takes 30-60 ms of stats, 0.1-0.9 s as one sync on a loaded machine).
SLICE_SECONDS = 0.01


class Answers:
    """The hook and command answers of the project at `root` for the user home `home`."""

    def __init__(
        self, root: Path, home: Path, *, log: Any = print, watch_seconds: float = WATCH_SECONDS
    ) -> None:
        self.root = root.resolve()
        self.watch_seconds = watch_seconds
        self.home = home
        self.log = log
        self._ws: Workspace | None = None
        self._stamp: tuple[Any, ...] | None = None
        self._watched = 0.0  # time.monotonic() the last watch pass started
        self._watching = False
        self._opened = False  # whether the workspace was ever opened (idle opens it in a fresh process)
        self._prepared: str | None = None  # the index version `_prepare` last made searches ready for
        self._preparing: str | None = None  # the index version `_prepare` is making searches ready for
        self._passes: DuePasses | None = None  # the due lifecycle passes, after a watch pass
        # A command's output, captured in these two for every command rather than in new ones: click caches
        # the text stream it writes to in a WeakKeyDictionary whose value is the stream itself, so every
        # stream it ever wrote to stayed alive (the soak's RSS climbed by 0.7 KB a command, without end).
        self._out, self._err = io.StringIO(), io.StringIO()

    # -- the workspace ------------------------------------------------------------------------------

    def _files_stamp(self) -> tuple[Any, ...]:
        assert self._ws is not None
        out: list[Any] = []
        for path in (self._ws.paths.index, *self._ws.paths.config_files):
            try:
                info = os.stat(path)
                out.append((info.st_dev, info.st_ino, info.st_mtime_ns if path.suffix == ".toml" else 0))
            except OSError:
                out.append(None)
        return tuple(out)

    def workspace(self, cwd: Path) -> Workspace:
        """The open workspace, in step with the notes (as a hook's would be), its `cwd` the request's."""
        if self._ws is not None and self._files_stamp() != self._stamp:
            self.reset()
        if self._ws is None:
            self._ws = Workspace.open(self.root, home=self.home, light=True, warm=True)
            self._ws.passes_between_requests = True  # `idle` runs them
            self._stamp = self._files_stamp()
            self._opened, self._prepared, self._preparing = True, None, None
        else:
            self._ws.sync()
        self._ws.cwd = cwd.resolve()
        return self._ws

    def reset(self) -> None:
        """Close the workspace; the next request opens it again."""
        if self._ws is not None:
            with suppress(Exception):
                self._ws.close()
        self._ws = None
        self._stamp = None
        self._passes = None  # they held the closed workspace: checked again after the next watch pass

    def close(self) -> None:
        self.reset()

    def held(self) -> dict[str, float]:
        """MiB the open workspace's warm store keeps between requests (`status`: the vectors, by column too)."""
        held = getattr(self._ws.store, "held", None) if self._ws is not None else None  # SQLite's store only
        return {name: round(size / 2**20, 1) for name, size in held().items()} if held is not None else {}

    def idle(self) -> None:
        """Between requests (called whenever none came for `server.IDLE_SLICE_SECONDS`): in a fresh process
        the workspace is opened, and after a write what searches keep is made again (`_prepare`); every
        `WATCH_SECONDS`, a pass over every note's stat (an editor's in-place save: `NoteIndex.watch`) in
        slices of `SLICE_SECONDS`, so a request arriving meanwhile waits that long at most, not a whole
        scan; then the repo map's refresh, then the due lifecycle passes, a slice at each quiet moment. A
        changed note is synced at once."""
        if self._ws is None:
            if self._opened:
                return  # reset after a failed request or a rebuilt index: the next request opens it
            self._opened = True  # tried once: a project that fails to open fails its requests instead
            self.workspace(self.root)
        if not self._prepare():
            return  # a slice of it ran: the rest of the quiet moment's work waits for the next one
        if self._passes is not None:
            passes, self._passes = self._passes, None  # dropped if a slice fails: tried after the next watch
            if not passes.step(SLICE_SECONDS):
                self._passes = passes
            return
        if not self._watching:
            if time.monotonic() - self._watched < self.watch_seconds:
                return
            self._watching, self._watched = True, time.monotonic()
        try:
            ws = self.workspace(self.root)
            done = ws.index.watch(SLICE_SECONDS)
        except BaseException:
            self._watching = False  # tried again in WATCH_SECONDS, not at every quiet moment
            raise
        if done is None:
            return  # the pass goes on after the next quiet moment
        self._watching = False
        if not done:
            ws.sync(full=True)
        from tether.lifecycle.housekeeping import refresh_repo

        refresh_repo(ws, in_hook=True)  # a long backlog goes to a background build: requests keep flowing
        from tether.lifecycle.passes import DuePasses

        self._passes = DuePasses(ws)  # from the next quiet moment; done at once when nothing is due

    def _prepare(self) -> bool:
        """What the next search would make first, made now that no request waits: numpy, the active
        memories' rowids and the vectors (by column, for a sparse embedder), which a write drops (at 10k
        memories 15-20 ms after each write, 0.3 s for the first of a process with numpy's import); then, a
        slice at each quiet moment, every active memory and the common words' postings (the warm store's
        `prepare`: at 10k memories ~0.4 s after a write that changed any memory's words)."""
        assert self._ws is not None
        store = self._ws.store
        version = store.version()
        if version == self._prepared:
            return True
        prepare = getattr(store, "prepare", None)  # SQLite's store only
        if self._preparing != version:
            self._preparing = version
            try:
                store.text(["tether"], 1)
                if self._ws.semantic_available:
                    store.nearest(self._ws.embedder.id, self._ws.embedder.embed(["tether"])[0], 1)
            except BaseException:
                self._prepared = version  # once per version: an idle moment is no place to retry
                raise
            return False
        try:
            if prepare is not None and not prepare(SLICE_SECONDS):
                return False  # goes on at the next quiet moment
        except BaseException:
            self._prepared = version
            raise
        self._prepared = version
        return True

    def _ours(self, cwd: Path) -> bool:
        found = find_project_root(cwd)
        return found is not None and found.resolve() == self.root

    # -- requests -----------------------------------------------------------------------------------

    def answer(self, header: dict[str, Any], body: bytes) -> tuple[bytes, bytes]:
        op = header.get("op")
        if op == "hook":
            return self.hook(header, body)
        if op == "cli":
            return self.cli(header)
        if op == "tool":
            return self.tool(header)
        return encode({"ok": False, "error": f"unknown op {op!r}: hook, cli, tool, status or stop"})

    def hook(self, header: dict[str, Any], body: bytes) -> tuple[bytes, bytes]:
        """One hook, as `tether.adapters.hooks.main` runs it: a failure is logged and answered with no
        output (fail open); a request this process should not answer is handed back (`fallback`)."""
        from tether.adapters.hooks.agents import AGENTS, known_event, parse, render
        from tether.adapters.hooks.behaviour import Reply, handle

        agent, event_name = str(header.get("agent", "")), str(header.get("event", ""))
        if agent not in AGENTS or not known_event(agent, event_name):
            return fallback("unknown agent or event")  # the hook runner says so in its log
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError:
            return fallback("input is not JSON")
        if not isinstance(payload, dict):
            return fallback("input is not a JSON object")
        started = time.perf_counter()
        try:
            event = parse(agent, event_name, payload)
            if event.kind in ("other", "stop"):
                output = render(agent, event_name, event, Reply())
            else:
                if not self._ours(event.cwd):
                    return fallback("another project")
                ws = self.workspace(event.cwd)
                output = render(agent, event_name, event, handle(ws, event))
        except Exception as exc:
            self._log_hook_failure(agent, event_name, exc, time.perf_counter() - started)
            output = None
        data = safe_json(printable_data(output)).encode() if output is not None else b""
        return reply_header(len(data)), data

    def _log_hook_failure(self, agent: str, event: str, exc: BaseException, elapsed: float) -> None:
        """The line the hook runner writes to `.tether/logs/hooks.log` for a failed hook."""
        try:
            logs = self.root / ".tether" / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            where = "".join(traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " | ")
            line = {
                "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "hook": f"{agent} {event}",
                "error": where,
                "elapsed_ms": round(elapsed * 1000),
                "resident": True,
            }
            with open(logs / "hooks.log", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        except Exception:
            pass

    def tool(self, header: dict[str, Any]) -> tuple[bytes, bytes]:
        """An MCP read tool, by the server's own code (`tether.adapters.mcp.results`) over this open
        workspace, the session's tool use marked as the server marks it. Anything unusual (an unknown id,
        a bad argument) is handed back: the server answers it in process, with its own tool errors."""
        name, arguments, session = header.get("tool"), header.get("arguments"), header.get("session")
        if name not in READ_TOOLS or not isinstance(arguments, dict):
            return fallback("not a read tool")
        if not (session is None or isinstance(session, str)):
            return fallback("a request of the wrong shape")
        cwd = Path(str(header.get("cwd") or self.root))
        if not self._ours(cwd):
            return fallback("another project")
        from tether.adapters.mcp.memories import mark_tools_used
        from tether.adapters.mcp.results import full, search_result
        from tether.errors import TetherError

        ws = self.workspace(cwd)
        if not ws.semantic_available:
            return fallback("the server loads the embedding model itself")  # results must not differ
        try:
            if name == "memory_search":
                files = arguments.get("files") or []
                category = arguments.get("category")
                result: Any = search_result(
                    ws,
                    str(arguments.get("query", "")),
                    files=[str(f) for f in files] if isinstance(files, list) else [],
                    category=str(category) if category is not None else None,
                    limit=int(arguments.get("limit", 10)),
                )
            else:
                memory = ws.ack(str(arguments.get("id", "")), session=session, via="memory_get")
                result = full(ws, memory)
        except (TetherError, ValueError, TypeError) as exc:
            return fallback(f"the server answers this itself: {type(exc).__name__}")
        mark_tools_used(ws, session)
        data = json.dumps(result).encode()  # the server's tool shows its control characters (`_shown`)
        return reply_header(len(data)), data

    def cli(self, header: dict[str, Any]) -> tuple[bytes, bytes]:
        """A read command, run by the CLI's own code with its output captured."""
        argv = header.get("argv")
        env = header.get("env") or {}
        if not (isinstance(argv, list) and argv and argv[0] in READ_COMMANDS and isinstance(env, dict)):
            return fallback("not a read command")
        cwd = Path(str(header.get("cwd") or self.root))
        if not self._ours(cwd):
            return fallback("another project")
        ws = self.workspace(cwd)
        if not ws.semantic_available:
            return fallback("the command loads the embedding model itself")  # results must not differ
        from tether.adapters.cli.common import Extensions
        from tether.adapters.cli.main import main as cli_main

        @contextmanager
        def opened(require_project: bool, sync_notes: bool) -> Iterator[Workspace]:
            yield ws

        out, err = self._out, self._err
        for stream in (out, err):
            stream.seek(0)
            stream.truncate()
        code = 0
        saved = {k: os.environ.get(k) for k in env}
        here = os.getcwd()
        try:
            os.environ.update({str(k): str(v) for k, v in env.items()})
            os.chdir(cwd)
            with redirect_stdout(out), redirect_stderr(err):
                try:
                    cli_main([str(a) for a in argv], obj=Extensions(open_workspace=opened))
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.chdir(here)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            sys.stdout.flush()
        data = command_body(code, out.getvalue(), err.getvalue())
        return reply_header(len(data)), data
