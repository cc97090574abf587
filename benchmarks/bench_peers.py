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
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

VERSIONS = {"repomem": "0.4.0", "basic-memory": "0.24.1", "claude-mem": "13.25.3", "bun": "1.4.5"}
PROMPT = "why does the upload retry loop ignore the backoff config?"
QUERY = "upload retry"
TETHER = str(Path(sys.executable).with_name("tether"))
# Telemetry off, model hubs offline, for every peer process.
QUIET = {"DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "150"}


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


def claude_payload(event: str, root: Path, session: str, **extra: object) -> str:
    """The JSON Claude Code writes to a hook's stdin (see shared/reference/claude-code-e2e.md)."""
    body = {
        "session_id": session,
        "transcript_path": str(root / ".transcript.jsonl"),
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": event,
        **extra,
    }
    return json.dumps(body)


def texts(count: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(summary, details, category) for `count` memories: bench_hooks' words and categories."""
    from bench_hooks import CATEGORIES, WORDS

    rng = random.Random(seed)
    return [
        (" ".join(rng.sample(WORDS, 8)).capitalize(), " ".join(rng.sample(WORDS, 20)), rng.choice(CATEGORIES))
        for _ in range(count)
    ]


def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)  # type: ignore[call-overload]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- installs ----------------------------------------------------------------------------------------------


def python312() -> str | None:
    """The first interpreter >= 3.12 on PATH or under pyenv (basic-memory requires 3.12)."""
    names = [shutil.which(f"python3.{minor}") for minor in (12, 13, 14)]
    pyenv = Path.home() / ".pyenv" / "versions"
    found = [n for n in names if n] + [str(p) for p in sorted(pyenv.glob("3.1[2-9]*/bin/python3"))]
    for candidate in found:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return candidate
    return None


def pip_venv(python: str, where: Path, package: str) -> Path:
    if not (where / "bin" / "python").exists():
        run([python, "-m", "venv", str(where)])
    if package not in run([str(where / "bin" / "pip"), "list", "--format=freeze"]).stdout.splitlines():
        print(f"  pip install {package} into {where} ...", flush=True)
        run([str(where / "bin" / "pip"), "install", "-q", package])
    return where / "bin"


def install(scratch: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Each peer's directory of executables, and the reason for each that could not be installed."""
    bins: dict[str, Path] = {}
    missing: dict[str, str] = {}
    bins["repomem"] = pip_venv(sys.executable, scratch / "repomem", f"repomem=={VERSIONS['repomem']}")
    py = python312()
    if py is None:
        missing["basic-memory"] = "needs Python >= 3.12 and none is installed here"
    else:
        bins["basic-memory"] = pip_venv(py, scratch / "bm", f"basic-memory=={VERSIONS['basic-memory']}")
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing["claude-mem"] = "node/npm not installed"
        return bins, missing
    prefix = scratch / "node"
    plugin = prefix / "node_modules" / "claude-mem" / "plugin"
    if not plugin.exists():
        print(f"  npm install claude-mem@{VERSIONS['claude-mem']} ...", flush=True)
        # --legacy-peer-deps: npm 11's resolver loops on better-auth's peer ranges otherwise.
        run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--legacy-peer-deps",
                f"claude-mem@{VERSIONS['claude-mem']}",
            ]
        )
    bun = scratch / "bun" / "package" / "bin"
    if not (bun / "bun").exists():
        (scratch / "bun").mkdir(exist_ok=True)
        print(f"  npm pack @oven/bun-linux-x64@{VERSIONS['bun']} ...", flush=True)
        packed = run(
            [npm, "pack", f"@oven/bun-linux-x64@{VERSIONS['bun']}"], cwd=scratch / "bun"
        ).stdout.split()[-1]
        run(["tar", "xzf", packed], cwd=scratch / "bun")
    if subprocess.run([str(bun / "bun"), "--version"], capture_output=True).returncode != 0:
        missing["claude-mem"] = "Bun would not run here"
    else:
        bins["claude-mem"] = plugin
        bins["bun"] = bun
    return bins, missing


# -- seeding, each tool the way it stores memories -----------------------------------------------------------

REPOMEM_SEED = """
import json, sys, time
from datetime import date
from repomem import db
from repomem.cli import _ensure_manual_session
from repomem.models import Observation
TYPES = {"pref": "pattern", "decision": "decision", "gotcha": "warning", "context": "learning"}
db.init_db()
project = sys.argv[1]
_ensure_manual_session(project)
for summary, detail, category in json.load(sys.stdin):
    db.save_observation(Observation(session_id="manual", project=project, type=TYPES[category],
        summary=summary, detail=detail, date=date.today().isoformat(), created_at=int(time.time())))
"""
# What repomem's SessionStart hook does (hooks/memory-inject.py in its repository; not in the wheel).
REPOMEM_HOOK = (
    "import sys, json; sys.stdin.read(); from repomem.inject import build_system_message; "
    "r = build_system_message(); r and print(json.dumps(r))"
)


def seed_tether(base: Path, size: int) -> tuple[Path, dict[str, str]]:
    from bench_hooks import build

    root, home = base / "tether-repo", base / "tether-home"
    home.mkdir()
    build(root, home, size, random.Random(7))
    runtime = base / "tether-run"
    runtime.mkdir()
    return root, {
        **os.environ,
        "TETHER_HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "TETHER_RESIDENT": "1",
    }


def seed_repomem(base: Path, bins: Path, memories: list[tuple[str, str, str]]) -> tuple[Path, dict[str, str]]:
    root = base / "repomem-repo"
    root.mkdir()
    run(["git", "init", "-q", str(root)])
    env = {
        **os.environ,
        **QUIET,
        "HOME": str(base / "repomem-home"),
        "REPOMEM_DIR": str(base / "repomem-home"),
    }
    run([str(bins / "python"), "-c", REPOMEM_SEED, root.name], input=json.dumps(memories), cwd=root, env=env)
    return root, env


def seed_basic_memory(
    base: Path, bins: Path, memories: list[tuple[str, str, str]]
) -> tuple[Path, dict[str, str]]:
    """Markdown notes in the project folder (basic-memory's own format), then its reindex, timed."""
    home = base / "bm-home"
    notes = home / "notes"
    (notes / "facts").mkdir(parents=True)
    for n, (summary, detail, category) in enumerate(memories):
        body = f"---\ntitle: {summary} {n}\ntype: note\ntags: [{category}]\n---\n\n{detail}\n\n## Observations\n- [{category}] {summary}\n"
        (notes / "facts" / f"{summary} {n}.md").write_text(body, encoding="utf-8")
    env = {
        **os.environ,
        **QUIET,
        "HOME": str(home),
        "BASIC_MEMORY_CONFIG_DIR": str(home / ".basic-memory"),
        "BASIC_MEMORY_HOME": str(notes),
        "BASIC_MEMORY_DEFAULT_SEARCH_TYPE": "text",
    }
    started = time.perf_counter()
    run([str(bins / "basic-memory"), "reindex", "--search"], cwd=notes, env=env)
    took = time.perf_counter() - started
    import sqlite3

    with sqlite3.connect(home / ".basic-memory" / "memory.db") as db:
        (indexed,) = db.execute("SELECT count(*) FROM entity").fetchone()
    print(
        f"  basic-memory: {len(memories)} notes written, `reindex --search` indexed {indexed} in {took:.1f} s"
    )
    return notes, env


def claude_mem_hooks(plugin: Path) -> dict[str, list[str]]:
    """The command lines of claude-mem's hooks.json, by event, in order."""
    spec = json.loads((plugin / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    return {
        event: [h["command"] for group in groups for h in group["hooks"]] for event, groups in spec.items()
    }


def seed_claude_mem(
    base: Path, bins: dict[str, Path], memories: list[tuple[str, str, str]]
) -> tuple[Path, dict[str, str]]:
    """Its worker started by its SessionStart hook's first command, then each memory saved through it."""
    plugin, root, home = bins["claude-mem"], base / "cm-repo", base / "cm-home"
    root.mkdir()
    run(["git", "init", "-q", str(root)])
    # Where `npx claude-mem install` puts the plugin: its CLI's search looks there.
    (home / ".claude" / "plugins" / "marketplaces" / "thedotmack").mkdir(parents=True)
    (home / ".claude" / "plugins" / "marketplaces" / "thedotmack" / "plugin").symlink_to(plugin)
    port = free_port()
    env = {
        **os.environ,
        **QUIET,
        "HOME": str(home),
        "PATH": f"{bins['bun']}{os.pathsep}{os.environ['PATH']}",
        "CLAUDE_PLUGIN_ROOT": str(plugin),
        "CLAUDE_MEM_DATA_DIR": str(home / ".claude-mem"),
        "CLAUDE_MEM_WORKER_PORT": str(port),
        "CLAUDE_MEM_CHROMA_ENABLED": "false",  # Chroma runs through `uvx chroma-mcp` and a hub model
    }
    start = claude_mem_hooks(plugin)["SessionStart"][0]
    run(
        ["bash", "-c", start],
        input=claude_payload("SessionStart", root, "seed", source="startup"),
        cwd=root,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/api/memory/save"
    for summary, detail, category in memories:
        body = json.dumps(
            {
                "title": summary,
                "text": f"{summary}. {detail}",
                "project": root.name,
                "metadata": {"type": category},
            }
        )
        request = urllib.request.Request(
            url, data=body.encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            json.loads(answer.read())
    return root, env


def stop_claude_mem(env: dict[str, str]) -> None:
    port = env["CLAUDE_MEM_WORKER_PORT"]
    with contextlib.suppress(OSError):
        urllib.request.urlopen(
            urllib.request.Request(f"http://127.0.0.1:{port}/api/admin/shutdown", method="POST"), timeout=10
        )
    pid_file = Path(env["CLAUDE_MEM_DATA_DIR"]) / "worker.pid"
    deadline = time.monotonic() + 15
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


# -- the cases and the interleaved run ---------------------------------------------------------------------

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
