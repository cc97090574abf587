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
                server.stdout.readline()
                if message["id"] == 2:
                    marks.append(time.perf_counter() - started)
                elif int(str(message["id"])) >= 10:
                    marks.append(time.perf_counter() - before)
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
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
