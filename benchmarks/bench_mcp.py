"""How long an agent waits for tether's MCP server: spawn over stdio → `tools/list` answered.

    .venv/bin/python benchmarks/bench_mcp.py [--runs 5]

Each run spawns `python -m tether.adapters.mcp.server` in a fresh git repository with `.tether/` and 50 memories,
connects the SDK's own client (what Claude Code, Codex and Gemini do), and stops the clock when the tool
list arrives; the baseline is spawning `python -c pass` to its exit, and for scale, importing the SDK alone. Prints the p50 of each and the ratio.
Then one `memory_search` on the same connection, the first call that opens the index.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.project import init_project
from tether.workspace import Workspace


def make_project(base: Path) -> tuple[Path, Path]:
    root, home = base / "repo", base / "home"
    root.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    init_project(root, home)
    with Workspace.open(root, home=home) as ws:
        for n in range(50):
            ws.add(f"Fact number {n} about module m{n % 7}", category="context", files=[f"src/m{n % 7}.py"])
    return root, home


async def spawn_to_tools_list(root: Path, home: Path) -> tuple[float, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.adapters.mcp.server"],
        env={"TETHER_HOME": str(home)},
        cwd=str(root),
    )
    with open(os.devnull, "w") as devnull:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=devnull)) as client:
            await client.list_tools()
            listed = time.perf_counter() - started
            before = time.perf_counter()
            await client.call_tool("memory_search", {"query": "fact about module m3"})
            first_call = time.perf_counter() - before
    return listed, first_call


def python_c(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, home = make_project(Path(tmp))
        anyio.run(spawn_to_tools_list, root, home)  # warm the OS file cache and .pyc files
        runs = [anyio.run(spawn_to_tools_list, root, home) for _ in range(args.runs)]
    baseline = statistics.median(python_c("pass") for _ in range(args.runs))
    # The floor the SDK sets: importing it is most of the wait, and tether's own import adds little.
    sdk = statistics.median(python_c("import mcp.server.mcpserver") for _ in range(args.runs))
    ours = statistics.median(python_c("import tether.adapters.mcp.server") for _ in range(args.runs))
    listed = statistics.median(r[0] for r in runs)
    first_call = statistics.median(r[1] for r in runs)
    print(f"python -c pass                          p50 {baseline * 1000:8.1f} ms")
    print(f"python -c 'import mcp.server.mcpserver' p50 {sdk * 1000:8.1f} ms  (the SDK alone)")
    print(f"python -c 'import tether.adapters.mcp.server'    p50 {ours * 1000:8.1f} ms")
    print(
        f"spawn -> tools/list answered            p50 {listed * 1000:8.1f} ms  ({listed / baseline:.1f}x python -c pass)"
    )
    print(f"first memory_search (opens index)       p50 {first_call * 1000:8.1f} ms")
    print(f"ratio {listed / baseline:.1f}")


if __name__ == "__main__":
    main()
