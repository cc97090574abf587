"""`tether mcp`'s front: the handshake and tools/list answered from what the SDK answered on an earlier start,
exactly as the SDK answers them; then the SDK's server takes the stream over (tool calls, unknown versions,
a stale cache), and a real MCP client sees no difference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tether.adapters.mcp.front import CACHE_FILE, stamp
from tether.project import init_project
from tether.workspace import Workspace


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    init_project(root, home)
    with Workspace.open(root, home=home) as ws:
        ws.add("Staging deploys go through make ship", category="decision")
    return root


def initialize(ident: Any, version: str = "2025-06-18") -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": params}


HANDSHAKE = [
    initialize(1),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "deploy"}},
    },
]


def talk(root: Path, home: Path, messages: list[dict[str, Any]]) -> dict[Any, Any]:
    """Send `messages` to a fresh `tether mcp`, one at a time, each request's answer read before the next."""
    env = {**os.environ, "TETHER_HOME": str(home)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tether", "mcp"],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    answers: dict[Any, Any] = {}
    try:
        for message in messages:
            server.stdin.write(json.dumps(message).encode() + b"\n")
            server.stdin.flush()
            if "id" in message:
                answer = json.loads(server.stdout.readline())
                answers[answer["id"]] = answer.get("result", answer.get("error"))
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return answers


def test_the_second_start_answers_the_handshake_as_the_sdk_did(project: Path, home: Path) -> None:
    first = talk(project, home, HANDSHAKE)  # no cache: the SDK answers everything, and is remembered
    cache = json.loads((home / CACHE_FILE).read_text(encoding="utf-8"))
    assert cache["stamp"] == stamp() and "2025-06-18" in cache["initialize"] and cache["tools"]["tools"]
    second = talk(project, home, HANDSHAKE)  # the front answers 1-3, the SDK's server the tool call
    assert second[1] == first[1] and second[2] == first[2] and second[3] == first[3] == {}
    assert "make ship" in json.dumps(second[4]) and second[4] == first[4]


def test_an_unknown_protocol_version_or_a_stale_cache_goes_to_the_sdk(project: Path, home: Path) -> None:
    talk(project, home, HANDSHAKE)
    other = talk(project, home, [initialize(1, "2024-11-05"), *HANDSHAKE[1:3]])
    assert other[1]["protocolVersion"] == "2024-11-05"  # negotiated by the SDK itself
    assert other[2]["tools"]
    path = home / CACHE_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "stamp": "another build", "tools": {"tools": []}}), encoding="utf-8")
    fresh = talk(project, home, HANDSHAKE[:3])
    assert fresh[2]["tools"]  # not the stale empty list
    assert json.loads(path.read_text(encoding="utf-8"))["stamp"] == stamp()  # and the cache is made again


def test_a_malformed_message_before_the_handshake_gets_the_sdk_transports_error(
    project: Path, home: Path
) -> None:
    talk(project, home, HANDSHAKE[:3])
    env = {**os.environ, "TETHER_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "tether", "mcp"],
        cwd=project,
        env=env,
        input=b"{oops\n",
        capture_output=True,
        timeout=60,
    )
    assert json.loads(done.stdout)["error"]["code"] == -32700


@pytest.mark.anyio
async def test_a_real_client_sees_the_same_server(project: Path, home: Path) -> None:
    talk(project, home, HANDSHAKE[:3])  # the cache exists: this client is answered by the front first
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tether", "mcp"], env={"TETHER_HOME": str(home)}, cwd=str(project)
    )
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull), read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("memory_search", {"query": "how do staging deploys go"})
    assert "memory_search" in tools and "make ship" in str(result)


def test_read_tools_go_to_the_resident_process_only_in_their_plain_shape(tmp_path: Path) -> None:
    # The front answers memory_search / memory_get through the resident process before the SDK loads; an
    # alias, an unknown argument or a bad value waits for the SDK's server (its validation, its errors).
    from tether.adapters.mcp.front import _through_resident

    asked: list[tuple[str, dict[str, Any]]] = []

    def remote(cwd: Path, name: str, arguments: dict[str, Any], session: str | None) -> dict[str, Any]:
        asked.append((name, arguments))
        return {"results": [{"id": "0a0b0c0d", "summary": "Bell \x07 and ünïcode"}], "hint": "h"}

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        return _through_resident(remote, tmp_path, {"name": name, "arguments": arguments})

    answered = call("memory_search", {"query": "staging port", "files": "a.py, b.py", "limit": 3})
    assert answered is not None and answered["isError"] is False
    assert asked[-1] == ("memory_search", {"query": "staging port", "files": ["a.py", "b.py"], "limit": 3})
    shown = answered["structuredContent"]["results"][0]["summary"]
    assert "\x07" not in shown and "ünïcode" in shown  # control characters shown, not obeyed
    assert json.loads(answered["content"][0]["text"]) == answered["structuredContent"]
    assert call("memory_get", {"id": "0a0b0c0d"}) is not None
    for name, arguments in [
        ("memory_search", {"q": "alias"}),
        ("memory_search", {"query": "  "}),
        ("memory_search", {"query": "x", "limit": 0}),
        ("memory_search", {"query": "x", "limit": True}),
        ("memory_search", {"query": "x", "category": "rumour"}),
        ("memory_get", {"memory_id": "0a0b0c0d"}),
        ("memory_add", {"summary": "writes stay with the server"}),
    ]:
        assert call(name, arguments) is None, (name, arguments)
    assert len(asked) == 2
