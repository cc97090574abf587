"""The stdio transport of the MCP server, answering every malformed message with a JSON-RPC error.

The SDK's `stdio_server` drops a line it cannot read as a JSON-RPC message: not JSON, not an object, no
`jsonrpc: "2.0"`, `params` that is no object, a batch... The client then waits for an answer that never
comes (9 of 11 such requests got none). JSON-RPC 2.0 §5.1 says what to answer: -32700 for text that is
not JSON, -32600 for JSON that is no valid request, with the request's id when one can be read, else
null. This transport reads the lines itself, hands valid messages to the SDK's server unchanged, and
answers the rest; a line over `MCP_BODY_MAX_BYTES` is answered without being parsed.

While it serves, file descriptor 1 points at stderr (as the SDK's transport does), so a stray `print` in
any library cannot corrupt the protocol stream.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any

import anyio
import mcp.types as types
from mcp.shared.message import SessionMessage

from tether.model.limits import MCP_BODY_MAX_BYTES

_LEADING_ID = re.compile(rb'"id"\s*:\s*(?:(-?\d{1,18})\b|"([^"\\]{0,64})")')


def error_for(line: bytes) -> types.JSONRPCError | None:
    """The JSON-RPC error answering `line`, or None when it is a message the server should read."""
    if len(line) > MCP_BODY_MAX_BYTES:
        # Not parsed; its id is read from the start, where JSON-RPC clients write it, so the caller waiting
        # on that request gets its answer.
        found = _LEADING_ID.search(line[:256])
        ident: int | str | None = None
        if found:
            ident = int(found.group(1)) if found.group(1) else found.group(2).decode("utf-8", "replace")
        return _error(ident, types.INVALID_REQUEST, f"message over {MCP_BODY_MAX_BYTES} bytes: not read")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "Parse error: the message is not JSON")
    if isinstance(data, dict) and "id" in data:
        ident = data["id"]
        if isinstance(ident, bool) or not isinstance(ident, int | str | None):
            # Read as a notification by the SDK (which never answers one): the id must be a string or number.
            return _error(None, types.INVALID_REQUEST, "Invalid Request: an id is a string or a number")
    try:
        types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except Exception as exc:  # the SDK's validation error, whatever its type
        ident = data.get("id") if isinstance(data, dict) else None
        if isinstance(ident, bool) or not isinstance(ident, int | str):
            ident = None
        what = "a batch (MCP has none)" if isinstance(data, list) else "not a valid JSON-RPC 2.0 message"
        return _error(ident, types.INVALID_REQUEST, f"Invalid Request: {what}", str(exc).splitlines()[0])
    return None


def _error(ident: int | str | None, code: int, message: str, data: str | None = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message, data=data)
    )


async def serve_stdio(server: Any) -> None:
    """Run `server` (an `MCPServer`) over this process's stdin and stdout."""
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    saved_in, saved_out = os.dup(0), os.dup(1)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray output goes to stderr, never onto the wire
    os.close(null)
    try:
        await serve_wire(server, wire_in, wire_out)
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
        wire_in.close()
        wire_out.close()


async def serve_wire(
    server: Any,
    wire_in: Any,
    wire_out: Any,
    replay: Sequence[bytes] = (),
    drop: Collection[Any] = frozenset(),
    answered: Callable[[str, str, Any], None] | None = None,
) -> None:
    """Serve `server` (an `MCPServer` or its low-level server) over `wire_in`/`wire_out`. `replay`: lines
    read before (by `tether.adapters.mcp.front`), served first; answers to ids in `drop` are not sent;
    `answered(method, protocol version, result)` sees the answers to `initialize` and to a first page
    of `tools/list` (the front keeps them for the next start)."""
    lowlevel = server._lowlevel_server if hasattr(server, "_lowlevel_server") else server
    to_server_send, to_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    from_server, from_server_receive = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()
    asked: dict[Any, tuple[str, str]] = {}  # request id -> (method, requested protocol version)
    pending = list(replay)

    async def write(message: types.JSONRPCMessage | types.JSONRPCError) -> None:
        text = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        if asked or drop:
            data = json.loads(text)
            ident = data.get("id") if isinstance(data, dict) else None
            if isinstance(ident, int | str) and ident in asked and answered is not None:
                method, version = asked.pop(ident)
                answered(method, version, data.get("result"))
            if isinstance(ident, int | str) and ident in drop:
                return
        async with lock:
            await anyio.to_thread.run_sync(_write_all, wire_out, text.encode("utf-8"))

    def note(line: bytes) -> None:
        if answered is None or (b'"initialize"' not in line and b'"tools/list"' not in line):
            return
        data = json.loads(line)
        if not isinstance(data, dict) or "id" not in data:
            return
        given = data.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        if data.get("method") == "initialize":
            asked[data["id"]] = ("initialize", str(params.get("protocolVersion", "")))
        elif data.get("method") == "tools/list" and not params.get("cursor"):
            asked[data["id"]] = ("tools/list", "")

    async def reader() -> None:
        async with to_server_send:
            while True:
                if pending:
                    line: bytes | None = pending.pop(0)
                else:
                    # Abandoned on cancel: a server that stopped must not wait for the agent's next line.
                    line = await anyio.to_thread.run_sync(_read_line, wire_in, abandon_on_cancel=True)
                if line is None:
                    return
                if not line.strip():
                    continue
                problem = error_for(line)
                if problem is not None:
                    await write(problem)
                    continue
                note(line)
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                await to_server_send.send(SessionMessage(message))

    async def writer() -> None:
        async with from_server_receive:
            async for session_message in from_server_receive:
                await write(session_message.message)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        await lowlevel.run(to_server, from_server, lowlevel.create_initialization_options())
        tasks.cancel_scope.cancel()


def _read_line(stream: Any) -> bytes | None:
    """One line from `stream` (None at the end). Past `MCP_BODY_MAX_BYTES` only its start is kept (enough to
    answer it, and longer than the limit) and the rest is read and dropped."""
    chunks: list[bytes] = []
    size = 0
    while True:
        piece = stream.readline(1 << 20)
        if not piece:
            return b"".join(chunks) if chunks else None
        if size <= MCP_BODY_MAX_BYTES:
            chunks.append(piece)
        size += len(piece)
        if piece.endswith(b"\n"):
            return b"".join(chunks)


def _write_all(stream: Any, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = stream.write(view)
        view = view[written or 0 :]
    if hasattr(stream, "flush"):
        stream.flush()


def main_stdio(server: Any) -> None:
    """Serve `server` (an `MCPServer`) over stdio until stdin closes."""
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:  # pragma: no cover - the agent stopped the server
        sys.exit(0)
