"""The MCP server (DESIGN §5): six memory tools over stdio or streamable HTTP, a thin adapter over `Workspace`.

Short results with ids from `memory_search`; the full text only from `memory_get`. The handshake never waits
on the index or an embedding model: the workspace opens on the first tool call and is kept, re-synced from
the notes (incrementally) on every call.

    $ python -m tether.adapters.mcp.server            # stdio, what agents spawn
    $ python -m tether.adapters.mcp.server --http     # streamable HTTP on http://127.0.0.1:8765/mcp

The server is built here; the workspace it keeps is `mcp_memories`, its tools are `mcp_tools`, the shapes
of their answers are `mcp_results`.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from tether.adapters.mcp import project_start
from tether.adapters.mcp.memories import (
    AGENT_SESSION_VARS,
    SESSION_KEY,
    Memories,
    Remote,
    agent_session,
    for_agent,
)
from tether.adapters.mcp.tools import register_tools
from tether.errors import TetherError, ValidationError
from tether.fs import write_atomic
from tether.model.limits import MCP_BODY_MAX_BYTES as MAX_BODY

__all__ = [
    "AGENT_SESSION_VARS",
    "INSTRUCTIONS",
    "NAME",
    "SESSION_KEY",
    "Memories",
    "agent_session",
    "build_server",
    "check_loopback",
    "for_agent",
    "http_token",
    "main",
    "project_start",
    "run",
]

NAME = "tether"
# Sent with the handshake on every connection: short, so it costs the agent's context almost nothing.
INSTRUCTIONS = (
    "tether is this repository's memory: preferences, decisions, gotchas and context learned in earlier "
    "sessions, tied to the files they are about. Call memory_search before working on unfamiliar code or "
    "when the answer may already be known; memory_get <id> for a memory's full text; memory_add to save "
    "a durable fact (one per call) once you learn it."
)
LOOPBACK_NAMES = ("localhost",)
TOKEN_FILE = "mcp-token"


def build_server(cwd: Path, remote: Remote | None = None) -> MCPServer:
    """The MCP server for the project at (or above) `cwd`. Nothing is opened until the first tool call.
    `remote`: how to ask the project's resident process for the read tools' answers (None: never).

    >>> build_server(Path(".")).run()  # doctest: +SKIP
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        tether_version = version("tether")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        tether_version = "0"

    memories = Memories(cwd, remote)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            memories.close()

    server = MCPServer(
        NAME, version=tether_version, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )
    register_tools(server, memories)
    return server


def check_loopback(host: str) -> str:
    """`host` if it is a loopback address: the HTTP server is for this machine's agents only."""
    if host in LOOPBACK_NAMES:
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ValidationError(
        f"refusing to listen on {host!r}: the MCP server binds to loopback only (its token is no TLS); "
        "use 127.0.0.1, ::1 or localhost (and a tunnel such as ssh -L to reach it from elsewhere)"
    )


def http_token(home: Path) -> str:
    """The bearer token of the HTTP transport: `$TETHER_HOME/mcp-token`, made (random, mode 0600) the first
    time and kept, so an agent configured with it keeps working across restarts. Loopback alone is not
    enough: any local process or user, and a web page through a browser, can reach a loopback port."""
    path = home / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        write_atomic(path, token + "\n", mode=0o600)
    elif path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)  # someone loosened it: only its owner may read it
    return token


class RequireToken:
    """ASGI middleware: every HTTP request needs `Authorization: Bearer <token>`, else 401 (nothing of the
    request reaches the MCP app). Lifespan events pass through."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token from $TETHER_HOME/mcp-token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="tether"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def run(cwd: Path, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the memory tools: over stdio (default) or streamable HTTP at http://host:port/mcp (with the
    bearer token of `http_token`, printed on start)."""
    if not http:
        from tether.adapters.mcp.stdio import main_stdio

        main_stdio(build_server(cwd))  # the SDK's stdio transport, answering malformed messages too
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from tether.project import user_home

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
    home = user_home()
    token = http_token(home)
    app = build_server(cwd).streamable_http_app(
        transport_security=security, host=host, max_request_body_size=MAX_BODY
    )
    where = f"[{host}]" if ":" in host else host
    print(
        f"tether mcp: serving http://{where}:{port}/mcp; every request needs the header "
        f"'Authorization: Bearer {token}' (kept in {home / TOKEN_FILE})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(RequireToken(app, token), host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tether.adapters.mcp.server", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--http", action="store_true", help="Serve streamable HTTP instead of stdio.")
    parser.add_argument("--host", default="127.0.0.1", help="Loopback address to listen on (with --http).")
    parser.add_argument("--port", type=int, default=8765, help="Port to listen on (with --http).")
    parser.add_argument("--cwd", "--project", type=Path, default=None, help="Directory inside the project.")
    args = parser.parse_args(argv)
    try:
        run(project_start(args.cwd, Path.cwd()), http=args.http, host=args.host, port=args.port)
    except TetherError as exc:
        parser.exit(2, f"tether mcp: {exc}\n")


if __name__ == "__main__":
    main()
