"""How long an agent waits for tether's MCP server: spawn over stdio → `tools/list` answered.

    .venv/bin/python benchmarks/bench_mcp.py [--runs 15] [--memories 1000]

Each run spawns, interleaved, in a git repository with `.tether/` and `--memories` memories, and stops the
clock when the `tools/list` answer arrives (initialize, initialized, tools/list written as an agent does):

- a plain stdio JSON-RPC loop in Python (the floor for any Python server: start, read, answer);
- `tether mcp` (what `tether install` configures): the front answers from the SDK's answers of an earlier
  start while the SDK loads;
- the SDK's own server (`python -m tether.adapters.mcp.server`), as every start was before the front;
- then one `memory_search` on the `tether mcp` connection: the first call, which waits for the SDK and opens
  the index, and a second one (the per-call cost).

Then the per-call cost at `--call-sizes` memories (real note files, indexed once): one long-lived `tether mcp`
answering in process (`TETHER_RESIDENT=0`) and one whose read tools go through the project's resident
process, each `memory_search` and `memory_get` call interleaved with a `tools/list` round trip to the plain
loop (the floor for one JSON-RPC exchange over stdio); and the first `memory_search` of a freshly spawned
`tether mcp`, after its handshake, both ways.

Ratios are medians of per-run ratios against the plain loop measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.project import init_project
from tether.workspace import Workspace

PLAIN_LOOP = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "plain", "version": "1"}}
    else:
        r = {"tools": [{"name": "memory_search", "inputSchema": {"type": "object"}}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"""
HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def search(ident: int) -> dict[str, object]:
    arguments = {"query": "fact about module m3"}
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": arguments},
    }


def make_project(base: Path, memories: int) -> tuple[Path, Path]:
    root, home = base / "repo", base / "home"
    root.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    init_project(root, home)
    with Workspace.open(root, home=home) as ws:
        for n in range(memories):
            ws.add(f"Fact number {n} about module m{n % 7}", category="context", files=[f"src/m{n % 7}.py"])
    return root, home


def answered(stdout: IO[bytes], ident: object) -> dict[str, Any]:
    """The answer to request `ident`, past any notification or log line a server writes before it."""
    while True:
        line = stdout.readline()
        if not line:
            raise EOFError(f"the server closed its output before answering request {ident}")
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == ident:
            return message


def session(argv: list[str], root: Path, env: dict[str, str], calls: int = 0) -> list[float]:
    """Seconds from spawn to the tools/list answer, then to each of `calls` memory_search answers."""
    started = time.perf_counter()
    server = subprocess.Popen(
        argv, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdin is not None and server.stdout is not None
    marks: list[float] = []
    try:
        for message in [*HANDSHAKE, *(search(10 + n) for n in range(calls))]:
            before = time.perf_counter()
            server.stdin.write(json.dumps(message).encode() + b"\n")
            server.stdin.flush()
            if "id" in message:
                answered(server.stdout, message["id"])
                if message["id"] == 2:
                    marks.append(time.perf_counter() - started)
                elif int(str(message["id"])) >= 10:
                    marks.append(time.perf_counter() - before)
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return marks


class Connection:
    """One long-lived server over stdio, past its handshake: `call` times one request's answer."""

    def __init__(self, argv: list[str], root: Path, env: dict[str, str]) -> None:
        self.server = subprocess.Popen(
            argv, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.ident = 100
        for message in HANDSHAKE:
            self.send(message)

    def send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps(message).encode() + b"\n")
        self.server.stdin.flush()
        if "id" not in message:
            return None
        answer: dict[str, Any] = json.loads(self.server.stdout.readline())
        return answer

    def call(self, method: str, params: dict[str, Any] | None = None) -> float:
        self.ident += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ident, "method": method}
        if params is not None:
            message["params"] = params
        started = time.perf_counter()
        answer = self.send(message)
        took = time.perf_counter() - started
        result = (answer or {}).get("result") or {}
        if "error" in (answer or {}) or result.get("isError"):
            raise SystemExit(f"{method} failed: {answer}")
        return took

    def close(self) -> None:
        assert self.server.stdin is not None
        self.server.stdin.close()
        self.server.wait(timeout=60)


def per_call(size: int, runs: int) -> None:
    """memory_search and memory_get, in process and through the resident process, against the plain loop."""
    import random

    from bench_hooks import WORDS, build
    from bench_resident import start_resident

    from tether.store.base import Query

    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="tether-bench-mcp-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        home.mkdir()
        build(root, home, size, rng)
        with Workspace.open(root, home=home) as ws:
            ids = [m.id for m in ws.find(Query(limit=runs + 1))]
        runtime = tempfile.mkdtemp(prefix="tbm-", dir="/tmp")
        env = {**os.environ, "TETHER_HOME": str(home), "XDG_RUNTIME_DIR": runtime, "TETHER_RESIDENT": "1"}
        resident = start_resident(root, env)
        tether = [sys.executable, "-m", "tether", "mcp"]
        connections = {
            "plain loop": Connection([sys.executable, "-c", PLAIN_LOOP], root, env),
            "in process": Connection(tether, root, {**env, "TETHER_RESIDENT": "0"}),
            "resident": Connection(tether, root, env),
        }
        ratios: dict[tuple[str, str], list[float]] = {}
        millis: dict[tuple[str, str], list[float]] = {}
        try:
            for n in range(runs + 1):  # the first round loads the SDK and opens the index
                query = " ".join(rng.sample(WORDS, 3))
                calls = {
                    "memory_search": {"name": "memory_search", "arguments": {"query": query}},
                    "memory_get": {"name": "memory_get", "arguments": {"id": ids[n]}},
                }
                for tool, params in calls.items():
                    for mode in ("in process", "resident"):
                        floor = connections["plain loop"].call("tools/list")
                        took = connections[mode].call("tools/call", params)
                        if n:
                            ratios.setdefault((tool, mode), []).append(took / floor)
                            millis.setdefault((tool, mode), []).append(took * 1000)
            # The first memory_search of a fresh `tether mcp`: in process it waits for the SDK and opens the
            # index; through the resident process the front answers it before the SDK has loaded.
            search = {"name": "memory_search", "arguments": {"query": "upload retry backoff"}}
            for _ in range(runs):
                for mode, environ in (("in process", {**env, "TETHER_RESIDENT": "0"}), ("resident", env)):
                    floor = connections["plain loop"].call("tools/list")
                    fresh = Connection(tether, root, environ)
                    took = fresh.call("tools/call", search)
                    fresh.close()
                    ratios.setdefault(("first memory_search", mode), []).append(took / floor)
                    millis.setdefault(("first memory_search", mode), []).append(took * 1000)
        finally:
            for connection in connections.values():
                connection.close()
            resident.terminate()
            resident.wait(timeout=30)
    print(
        f"\nper call, {size} memories ({runs} interleaved runs; x a tools/list round trip to the plain loop)"
    )
    print("| memories | tool | in process | resident | resident / in process |")
    print("|---|---|---|---|---|")
    for tool in ("memory_search", "memory_get", "first memory_search"):
        local, remote = ratios[(tool, "in process")], ratios[(tool, "resident")]
        paired = statistics.median(
            r / i for r, i in zip(millis[(tool, "resident")], millis[(tool, "in process")], strict=True)
        )
        print(
            f"| {size} | {tool} | {statistics.median(local):.1f}x "
            f"({statistics.median(millis[(tool, 'in process')]):.1f} ms) | {statistics.median(remote):.1f}x "
            f"({statistics.median(millis[(tool, 'resident')]):.1f} ms) | {paired:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--call-sizes", default="1000,10000", help="per-call sizes ('' to skip)")
    parser.add_argument("--spawn", action=argparse.BooleanOptionalAction, default=True, help="spawn runs")
    args = parser.parse_args()
    if args.spawn:
        spawn(args.runs, args.memories)
    for size in (int(s) for s in args.call_sizes.split(",") if s):
        per_call(size, args.runs)


def spawn(runs: int, memories: int) -> None:
    """Spawn -> tools/list, and the first two memory_search calls on `tether mcp`."""
    args = argparse.Namespace(runs=runs, memories=memories)
    with tempfile.TemporaryDirectory() as tmp:
        root, home = make_project(Path(tmp), args.memories)
        env = {**os.environ, "TETHER_HOME": str(home), "TETHER_RESIDENT": "0"}
        subjects = {
            "plain JSON-RPC loop": [sys.executable, "-c", PLAIN_LOOP],
            "tether mcp (front)": [sys.executable, "-m", "tether", "mcp"],
            "SDK server (no front)": [sys.executable, "-m", "tether.adapters.mcp.server"],
        }
        session(subjects["tether mcp (front)"], root, env, calls=1)  # the cache, the .pyc files, the index
        listed: dict[str, list[float]] = {name: [] for name in subjects}
        first: list[float] = []
        second: list[float] = []
        for _ in range(args.runs):
            for name, argv in subjects.items():
                marks = session(argv, root, env, calls=2 if name == "tether mcp (front)" else 0)
                listed[name].append(marks[0])
                if len(marks) == 3:
                    first.append(marks[1])
                    second.append(marks[2])
    plain = listed["plain JSON-RPC loop"]
    print(f"spawn -> tools/list answered ({args.runs} interleaved runs, {args.memories} memories)")
    print(f"{'server':<28}{'p50 ms':>10}{'x plain loop':>14}")
    for name, values in listed.items():
        ratio = statistics.median(v / p for v, p in zip(values, plain, strict=True))
        print(f"{name:<28}{statistics.median(values) * 1000:>10.1f}{ratio:>13.2f}x")
    print(
        f"first memory_search on tether mcp (waits for the SDK, opens the index): {statistics.median(first) * 1000:.1f} ms"
    )
    print(f"second memory_search (per call): {statistics.median(second) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
