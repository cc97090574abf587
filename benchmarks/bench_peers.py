"""tether beside its peers, installed from the package registries, in one interleaved run.

    .venv/bin/python benchmarks/bench_peers.py [--scratch /tmp/peers-scratch] [--runs 9] [--memories 1000]

Installs into `--scratch` (kept between invocations; a peer already there is not installed again):
repomem from PyPI into a venv of this interpreter, basic-memory from PyPI into a venv of the first Python
>= 3.12 found (it requires 3.12), claude-mem from npm, and Bun from npm (claude-mem's hooks, worker and search
run under Bun; npm does not run the `bun` package's postinstall, so the binary is taken from its platform
package, `@oven/bun-linux-x64`, with `npm pack`). Nothing is downloaded from a model hub: basic-memory's
semantic channel needs a fastembed model, so it runs with text search only (`HF_HUB_OFFLINE=1`; an
interpreter without SQLite extension loading disables its vectors anyway), and claude-mem runs without
Chroma (`CLAUDE_MEM_CHROMA_ENABLED=false`), as an offline install has to.

Each tool is seeded with `--memories` memories the way it stores them, the same generated texts in each
(bench_hooks' words): tether, note files indexed once (bench_hooks.build); repomem, observations through its
own `db.save_observation`, which `repomem add` calls; basic-memory, markdown notes in its project folder, then
`basic-memory reindex --search`; claude-mem, `POST /api/memory/save` to its worker (its manual-memory path).

Then, round by round, every operation runs as a fresh process, as an agent runs it, each right after a
`python -c pass` and a `node -e 0` (ratios are medians of per-run ratios against the baseline run beside it;
the machine is shared, so ratios are what to compare): the prompt and session-start hooks with the JSON
Claude Code sends (tether's with the resident process up and with `TETHER_RESIDENT=0`), a search from each
CLI, and MCP spawn -> `tools/list` answered (timed by bench_mcp's client, beside its plain JSON-RPC loop).
Whatever a peer cannot do offline, or does not ship in its registry package, is printed as not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from peers_setup import (
    REPOMEM_HOOK,
    VERSIONS,
    claude_mem_hooks,
    claude_payload,
    install,
    seed_basic_memory,
    seed_claude_mem,
    seed_repomem,
    seed_tether,
    stop_claude_mem,
)

PROMPT = "why does the upload retry loop ignore the backoff config?"
QUERY = "upload retry"
TETHER = str(Path(sys.executable).with_name("tether"))


@dataclass
class Case:
    """One operation of one tool: a fresh process (or an MCP spawn when `mcp`)."""

    operation: str
    tool: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin: str = ""
    mcp: bool = False
    samples: list[float] = field(default_factory=list)
    bases: dict[str, list[float]] = field(default_factory=dict)
    last: str = ""


def paired(values: Sequence[float], bases: Sequence[float]) -> float:
    """The median of per-run ratios: each run against the baseline measured beside it."""
    if not values or len(values) != len(bases):
        raise ValueError(f"{len(values)} runs against {len(bases)} baselines")
    return statistics.median(v / b for v, b in zip(values, bases, strict=True))


def row(case: Case) -> str:
    """A table row: p50 ms and the paired ratios against every baseline measured beside it."""
    ratios = " | ".join(f"{paired(case.samples, case.bases[name]):.2f}x" for name in sorted(case.bases))
    return f"| {case.operation} | {case.tool} | {statistics.median(case.samples) * 1000:.1f} | {ratios} |"


def texts(count: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(summary, details, category) for `count` memories: bench_hooks' words and categories."""
    from bench_hooks import CATEGORIES, WORDS

    rng = random.Random(seed)
    return [
        (" ".join(rng.sample(WORDS, 8)).capitalize(), " ".join(rng.sample(WORDS, 20)), rng.choice(CATEGORIES))
        for _ in range(count)
    ]


BASES = ("python -c pass", "node -e 0", "plain JSON-RPC loop")


def cases(
    base: Path, bins: dict[str, Path], size: int
) -> tuple[list[Case], dict[str, str], list[dict[str, str]]]:
    """Every measured case, what could not be measured and why, and the environments to clean up."""
    from bench_mcp import PLAIN_LOOP

    memories = texts(size)
    out: list[Case] = []
    skipped: dict[str, str] = {}
    root, env = seed_tether(base, size)
    local = {**env, "TETHER_RESIDENT": "0"}
    hook = [TETHER, "hook", "claude"]
    for tag, label, environ in (
        ("up", "tether (resident up)", env),
        ("local", "tether (TETHER_RESIDENT=0)", local),
    ):
        # A new session each run, as bench_resident does: no cooldown quiets a memory.
        prompt = claude_payload("UserPromptSubmit", root, f"p-{tag}-@RUN@", prompt=PROMPT)
        start = claude_payload("SessionStart", root, f"s-{tag}-@RUN@", source="startup")
        out += [
            Case(
                "UserPromptSubmit hook",
                label,
                [*hook, "UserPromptSubmit"],
                root,
                environ,
                prompt,
            ),
            Case(
                "SessionStart hook",
                label,
                [*hook, "SessionStart"],
                root,
                environ,
                start,
            ),
            Case("search CLI", label, [TETHER, "search", QUERY], root, environ),
            Case("MCP spawn -> tools/list", label, [TETHER, "mcp"], root, environ, mcp=True),
        ]
    out.append(
        Case(
            "MCP spawn -> tools/list",
            "plain JSON-RPC loop (floor)",
            [sys.executable, "-c", PLAIN_LOOP],
            root,
            env,
            mcp=True,
        )
    )
    envs = [env]
    if "repomem" in bins:
        rm = bins["repomem"]
        rroot, renv = seed_repomem(base, rm, memories)
        out += [
            Case(
                "SessionStart hook",
                "repomem (its inject hook)",
                [str(rm / "python"), "-c", REPOMEM_HOOK],
                rroot,
                renv,
                claude_payload("SessionStart", rroot, "r-@RUN@", source="startup"),
            ),
            Case("search CLI", "repomem", [str(rm / "repomem"), "search", QUERY], rroot, renv),
        ]
        skipped["repomem UserPromptSubmit hook"] = "it has none (its hooks are SessionStart and Stop)"
        skipped["repomem MCP"] = (
            "its server (server/mcp_server.py) is not in the PyPI wheel; install.sh copies it from a git clone"
        )
    if "basic-memory" in bins:
        bm = bins["basic-memory"]
        notes, benv = seed_basic_memory(base, bm, memories)
        out += [
            Case(
                "SessionStart hook",
                "basic-memory (hook session-start)",
                [str(bm / "basic-memory"), "hook", "session-start", "--harness", "claude"],
                notes,
                benv,
                claude_payload("SessionStart", notes, "m-@RUN@", source="startup"),
            ),
            Case(
                "search CLI",
                "basic-memory (tool search-notes, text)",
                [str(bm / "basic-memory"), "tool", "search-notes", QUERY],
                notes,
                benv,
            ),
            Case(
                "MCP spawn -> tools/list",
                "basic-memory (mcp)",
                [str(bm / "basic-memory"), "mcp"],
                notes,
                benv,
                mcp=True,
            ),
        ]
        skipped["basic-memory UserPromptSubmit hook"] = (
            "it has none (its hooks are SessionStart and PreCompact)"
        )
    if "claude-mem" in bins:
        croot, cenv = seed_claude_mem(base, bins, memories)
        envs.append(cenv)
        commands = claude_mem_hooks(bins["claude-mem"])
        mcp = json.loads((bins["claude-mem"] / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
            "mcp-search"
        ]
        cli = bins["claude-mem"].parent / "dist" / "npx-cli" / "index.js"
        out += [
            Case(
                "UserPromptSubmit hook",
                "claude-mem (session-init)",
                ["bash", "-c", commands["UserPromptSubmit"][0]],
                croot,
                cenv,
                claude_payload("UserPromptSubmit", croot, "c-@RUN@", prompt=PROMPT),
            ),
            Case(
                "SessionStart hook",
                "claude-mem (worker start, worker up)",
                ["bash", "-c", commands["SessionStart"][0]],
                croot,
                cenv,
                claude_payload("SessionStart", croot, "c-@RUN@", source="startup"),
            ),
            Case(
                "SessionStart hook",
                "claude-mem (context)",
                ["bash", "-c", commands["SessionStart"][1]],
                croot,
                cenv,
                claude_payload("SessionStart", croot, "c-@RUN@", source="startup"),
            ),
            Case(
                "search CLI",
                "claude-mem (search, worker up)",
                ["node", str(cli), "search", QUERY],
                croot,
                cenv,
            ),
            Case(
                "MCP spawn -> tools/list",
                "claude-mem (.mcp.json server)",
                [mcp["command"], *mcp["args"]],
                croot,
                cenv,
                mcp=True,
            ),
        ]
    return out, skipped, envs


def timed(case: Case, n: int) -> float:
    """Seconds of one run (an MCP case: spawn to the tools/list answer); the output kept for the report."""
    from bench_mcp import session

    if case.mcp:
        return session(case.argv, case.cwd, case.env)[0]
    started = time.perf_counter()
    done = subprocess.run(
        case.argv,
        input=case.stdin.replace("@RUN@", str(n)),
        cwd=case.cwd,
        env=case.env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
    case.last = done.stdout
    return took


def measure(table: list[Case], runs: int, skipped: dict[str, str]) -> list[Case]:
    """Round by round, each case right after its baselines; round 0 warms caches and is dropped."""
    from bench_mcp import PLAIN_LOOP, session

    floor = [sys.executable, "-c", PLAIN_LOOP]
    root = table[0].cwd
    baselines = {
        "python -c pass": lambda: timed(
            Case("", "", [sys.executable, "-c", "pass"], root, dict(os.environ)), 0
        ),
        "node -e 0": lambda: timed(Case("", "", ["node", "-e", "0"], root, dict(os.environ)), 0),
        "plain JSON-RPC loop": lambda: session(floor, root, dict(os.environ))[0],
    }
    live = list(table)
    for n in range(runs + 1):
        for case in list(live):
            bases = {name: baselines[name]() for name in BASES if case.mcp or name != "plain JSON-RPC loop"}
            try:
                took = timed(case, n)
            except (RuntimeError, OSError, ValueError, EOFError, subprocess.TimeoutExpired) as failed:
                skipped[f"{case.tool} {case.operation}"] = f"failed: {failed}"
                live.remove(case)
                continue
            if n:
                case.samples.append(took)
                for name, value in bases.items():
                    case.bases.setdefault(name, []).append(value)
        print(f"  round {n} of {runs} done", flush=True)
    return live


def report(done: list[Case], skipped: dict[str, str], runs: int, size: int) -> None:
    print(
        f"\n{size} memories each, {runs} interleaved runs (paired medians of per-run ratios; load {os.getloadavg()[0]:.1f})"
    )
    print(f"| operation | tool | p50 ms | x {' | x '.join(BASES)} | reply bytes |")
    print("|---|---|---|" + "---|" * (len(BASES) + 1))
    for case in sorted(done, key=lambda c: c.operation):
        cells = [f"{paired(case.samples, case.bases[b]):.2f}x" if b in case.bases else "-" for b in BASES]
        print(
            f"| {case.operation} | {case.tool} | {statistics.median(case.samples) * 1000:.1f} | {' | '.join(cells)} | {'-' if case.mcp else len(case.last)} |"
        )
    every = {b: [v for c in done for v in c.bases.get(b, [])] for b in BASES}
    print(
        "baselines, p50 ms over the run: "
        + ", ".join(f"{b} {statistics.median(v) * 1000:.1f}" for b, v in every.items() if v)
    )
    for what, why in skipped.items():
        print(f"not measured: {what}: {why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scratch", type=Path, default=Path("/tmp/peers-scratch"), help="installs (kept) and seeds (removed)"
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="200 memories, 2 runs")
    args = parser.parse_args()
    if args.quick:
        args.memories, args.runs = 200, 2
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "src" / "tether"), quiet=1)
    args.scratch.mkdir(parents=True, exist_ok=True)
    print(f"installing into {args.scratch} (versions {VERSIONS})", flush=True)
    bins, skipped = install(args.scratch)
    skipped = {f"{tool} (all)": why for tool, why in skipped.items()}
    base = args.scratch / f"run-{os.getpid()}"
    base.mkdir()
    resident = None
    envs: list[dict[str, str]] = []
    try:
        table, more, envs = cases(base, bins, args.memories)
        skipped.update(more)
        from bench_resident import start_resident

        resident = start_resident(table[0].cwd, envs[0])
        report(measure(table, args.runs, skipped), skipped, args.runs, args.memories)
    finally:
        if resident is not None:
            resident.terminate()
            resident.wait(timeout=30)
        for env in envs[1:]:
            stop_claude_mem(env)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
