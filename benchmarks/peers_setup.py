"""Installing and seeding the peers `bench_peers.py` times (repomem, basic-memory, claude-mem and Bun),
each from its package registry into a scratch directory, and tether beside them: see that script's docstring."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VERSIONS = {"repomem": "0.4.0", "basic-memory": "0.24.1", "claude-mem": "13.25.3", "bun": "1.4.5"}
# Telemetry off, model hubs offline, for every peer process.
QUIET = {"DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "150"}


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
