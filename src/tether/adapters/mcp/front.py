"""`tether mcp` over stdio: the handshake and `tools/list` answered before the MCP SDK is imported.

Importing the SDK is almost all of an MCP server's start (0.6-2 s; a plain JSON-RPC loop answers in
~30 ms), and agents wait for `tools/list` before their first turn. So this front, on the standard library
alone, answers `initialize`, `ping` and `tools/list` itself (then imports and builds the real server in a
thread, so the import does not slow those answers), from the answers the SDK gave on an earlier start (`$TETHER_HOME/mcp-front.json`, kept
per tether version and per source of the server, its tools and the SDK: any change means the SDK answers
again). With the project's resident process up, `memory_search` and `memory_get` are answered through it
(`remote`) without waiting for the SDK. The first message it does not know (another tool call) waits for the
server, which then takes the stream over: the handshake is replayed to it under ids of the front's own, whose answers are not sent on
but kept as the next start's answers.

    $ tether mcp        # what `tether install` writes into an agent's configuration
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from tether.adapters.mcp import project_start

CACHE_FILE = "mcp-front.json"
_INIT_ID = "tether-front-initialize"
_TOOLS_ID = "tether-front-tools"
# The server's sources whose change changes what the handshake or tools/list answers.
_SOURCES = ("server.py", "tools.py", "results.py", "front.py")


def stamp() -> str:
    """What the cached answers were made by: tether's version, the server's sources, the SDK's files."""
    from importlib.util import find_spec

    from tether import __version__

    parts = [__version__]
    here = Path(__file__).resolve().parent
    spec = find_spec("mcp")
    paths = [here / name for name in _SOURCES]
    if spec is not None and spec.origin:
        paths.append(Path(spec.origin))
    for path in paths:
        try:
            info = path.stat()
            parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
        except OSError:
            parts.append(f"{path.name}:-")
    return "|".join(parts)


def load_cache(home: Path, current: str) -> dict[str, Any]:
    try:
        data = json.loads((home / CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("stamp") == current else {}


def save_cache(home: Path, data: dict[str, Any]) -> None:
    try:
        from tether.fs import write_atomic

        home.mkdir(parents=True, exist_ok=True)
        write_atomic(home / CACHE_FILE, json.dumps(data) + "\n")
    except OSError:
        pass  # an optimization: the next start asks the SDK again


class _Loader(threading.Thread):
    """Imports the SDK and builds the server while the front answers the handshake."""

    def __init__(self, cwd: Path, remote: Any = None) -> None:
        super().__init__(daemon=True)
        self.cwd = cwd
        self.remote = remote
        self.server: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from tether.adapters.mcp.server import build_server

            self.server = build_server(self.cwd, self.remote)
        except BaseException as exc:  # raised again where the server is needed
            self.error = exc


def serve(cwd: Path, home: Path, remote: Any = None) -> None:
    """Serve the memory tools over this process's stdin and stdout (the front, then the SDK's server);
    `remote`: `tether.adapters.mcp.memories.Remote`, how the read tools reach the resident process."""
    loader = _Loader(cwd, remote)
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray output (an import's print) goes to stderr, never onto the wire
    os.close(null)
    current = stamp()
    cache = load_cache(home, current)
    replay: list[bytes] = []  # the handshake the front answered, to be replayed to the server
    answered_init = False
    while True:
        line = wire_in.readline()
        if not line:
            return  # the agent closed the stream before needing the server
        message = _request(line) or {}
        method, ident = message.get("method"), message.get("id")
        if method == "initialize" and ident is not None and not answered_init:
            version = str((message.get("params") or {}).get("protocolVersion", ""))
            result = (cache.get("initialize") or {}).get(version)
            if result is not None:
                _send(wire_out, {"jsonrpc": "2.0", "id": ident, "result": result})
                replay.append(json.dumps({**message, "id": _INIT_ID}).encode() + b"\n")
                answered_init = True
                continue
        elif method == "notifications/initialized" and answered_init:
            replay.append(line)
            continue
        elif method == "ping" and ident is not None and answered_init:
            _send(wire_out, {"jsonrpc": "2.0", "id": ident, "result": {}})
            continue
        elif (
            method == "tools/list"
            and ident is not None
            and answered_init
            and "tools" in cache
            and not (message.get("params") or {}).get("cursor")
        ):
            _send(wire_out, {"jsonrpc": "2.0", "id": ident, "result": cache["tools"]})
            # Now the SDK: loading it in a thread from the start would slow these answers (one GIL).
            if loader.ident is None:  # not started yet
                loader.start()
            continue
        elif method == "tools/call" and ident is not None and answered_init and remote is not None:
            result = _through_resident(remote, cwd, message.get("params"))
            if result is not None:
                _send(wire_out, {"jsonrpc": "2.0", "id": ident, "result": result})
                continue
        replay.append(line)
        break
    if loader.ident is None:
        loader.start()
    loader.join()
    if loader.error is not None:
        raise loader.error
    _hand_over(loader.server, wire_in, wire_out, replay, answered_init, home, current)


def _hand_over(
    server: Any,
    wire_in: Any,
    wire_out: Any,
    replay: list[bytes],
    answered_init: bool,
    home: Path,
    current: str,
) -> None:
    """Let the SDK's server serve the rest, replaying what the front read; keep its handshake answers."""
    import anyio

    from tether.adapters.mcp.stdio import serve_wire

    lines = list(replay)
    if answered_init:
        # Ask the server for the tools under the front's own id right after the handshake, so the next
        # start has them even when this agent never lists them (its answer is kept, not sent on).
        marker = next((i for i, raw in enumerate(lines) if b"notifications/initialized" in raw), None)
        if marker is not None:
            probe = {"jsonrpc": "2.0", "id": _TOOLS_ID, "method": "tools/list"}
            lines.insert(marker + 1, json.dumps(probe).encode() + b"\n")
    kept: dict[str, Any] = {}

    def answered(method: str, version: str, result: Any) -> None:
        if not isinstance(result, dict):
            return
        if method == "initialize":
            kept["initialize"] = {version: result}
        elif method == "tools/list":
            kept["tools"] = result
        if "initialize" in kept and "tools" in kept:
            save_cache(home, {"stamp": current, **kept})
            kept.clear()

    try:
        anyio.run(serve_wire, server, wire_in, wire_out, lines, {_INIT_ID, _TOOLS_ID}, answered)
    except KeyboardInterrupt:  # pragma: no cover - the agent stopped the server
        sys.exit(0)


# The read tools the front can answer through the resident process, and the arguments it forwards as they
# are; any other name, alias or shape waits for the SDK's server (its validation, its tool errors).
_FORWARDED = {"memory_search": {"query", "files", "category", "limit"}, "memory_get": {"id"}}
_CATEGORIES = ("pref", "decision", "gotcha", "context")


def _through_resident(remote: Any, cwd: Path, params: Any) -> dict[str, Any] | None:
    """A `tools/call` result answered by the resident process before the SDK has loaded (what the SDK's
    server would answer: the structured result, and as text its JSON indented by two), or None."""
    if not isinstance(params, dict) or not isinstance(params.get("arguments", {}), dict):
        return None
    name, arguments = params.get("name"), dict(params.get("arguments") or {})
    if name not in _FORWARDED or not set(arguments) <= _FORWARDED[name] or not _plain(name, arguments):
        return None
    from tether.adapters.mcp.memories import AGENT_SESSION_VARS
    from tether.model.display import printable_data

    if name == "memory_search":
        files = arguments.get("files")
        items = [files] if isinstance(files, str) else files or []
        arguments["files"] = [part.strip() for item in items for part in item.split(",") if part.strip()]
    names = ("TETHER_SESSION", *AGENT_SESSION_VARS)
    session = next((os.environ[n] for n in names if os.environ.get(n)), None)
    try:
        answer = remote(cwd.resolve(), name, arguments, session)
    except Exception:
        return None  # the SDK's server answers it, and asks the resident process again itself
    if not isinstance(answer, dict):
        return None
    shown = printable_data(answer)  # as the server's tools show memory text (`tools._shown`)
    text = json.dumps(shown, indent=2, ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": shown}


def _plain(name: str, arguments: dict[str, Any]) -> bool:
    """Arguments the tool's schema accepts as they are (else the SDK's validation speaks)."""
    from tether.model.limits import QUERY_MAX

    if name == "memory_get":
        return isinstance(arguments.get("id"), str) and 0 < len(arguments["id"]) <= 64
    query, files, limit = arguments.get("query"), arguments.get("files"), arguments.get("limit", 10)
    return (
        isinstance(query, str)
        and 0 < len(query) <= QUERY_MAX
        and bool(query.strip())
        and (
            files is None
            or isinstance(files, str)
            or (isinstance(files, list) and all(isinstance(f, str) for f in files))
        )
        and arguments.get("category") in (None, *_CATEGORIES)
        and type(limit) is int
        and 1 <= limit <= 50
    )


def _request(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("jsonrpc") == "2.0" else None


def _send(wire_out: Any, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    view = memoryview(data)
    while view:
        written = wire_out.write(view)
        view = view[written or 0 :]


def main(argv: list[str], remote: Any = None) -> int | None:
    """`tether mcp [--project DIR]` without the CLI framework; None when `argv` asks for anything else (the
    CLI's own `tether mcp` then parses it: `--http`, `--help`, a mistake). `remote`: see `serve`."""
    project: Path | None = None
    if argv[:1] == ["--project"] and len(argv) == 2:
        project = Path(argv[1])
        if not project.is_dir():
            return None
    elif argv:
        return None
    from tether.project import user_home

    serve(project_start(project, Path.cwd()), user_home(), remote)
    return 0
