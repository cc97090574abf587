"""The team load test: 9, 27 and 81 concurrent agent sessions against SQLite alone and against Postgres.

    .venv/bin/python benchmarks/bench_team.py [--quick] [--sessions 9,27,81] [--seconds 15] [--backends sqlite,postgres]

Each session is a process of its own that, for a fixed time, runs what an agent's turn costs tether,
again and again, each round a new agent session: the hooks `SessionStart`, `UserPromptSubmit` (recall),
`PostToolUse` on a Read, `PreToolUse` and `PostToolUse` on an Edit — each through the hook entry point
(`tether.adapters.hooks.main`, which opens its own light workspace as a hook process does; the
interpreter start of a real hook process is left out: it is the same for both backends) — then a memory
add and an acknowledgement through a long-lived workspace, as the MCP server's `memory_add` and an ack do.
All sessions work in one checkout, so both backends carry the same load; with Postgres its memories,
search and events are in the team database (pgserver's, on a unix socket, on the same two cores as the
sessions: or `TETHER_BENCH_DATABASE_URL`).

Printed per backend and session count: rounds and operations per second, p50/p95/p99 latency of every hook
and of the add, the errors (a hook that failed open counts as one), and the check that nothing was lost:
every add acknowledged to a session is in the store, the canary's `acted` counter equals the acks that
returned, and every memory's `surfaced` and `acted` counters equal the events of the log.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import memory_texts, queries

HOOKS = ("SessionStart", "UserPromptSubmit", "PostToolUse(Read)", "PreToolUse(Edit)", "PostToolUse(Edit)")
SEED_MEMORIES = 300
CANARY = "Canary for the load test: counted acknowledgements only (zebra quokka)"


def build(root: Path, home: Path) -> list[str]:
    """A repository with bench_core's files and SEED_MEMORIES notes about them, `tether init` done."""
    from tether.model.memory import Memory, new_id
    from tether.notes import format as notes
    from tether.project import init_project

    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    files: set[str] = set()
    texts = memory_texts(SEED_MEMORIES)
    for _, _, _, refs in texts:
        files.update(r for r in refs if not r.endswith("/"))
    for path in sorted(files):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {path}\nVALUE = 1\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "bench"], cwd=root, check=True, env=env)
    paths, _ = init_project(root, home)
    assert paths.project_notes is not None
    for summary, details, category, refs in texts:
        memory = Memory(id=new_id(), summary=summary, details=details, category=category, files=refs)
        (paths.project_notes / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    return sorted(files)


def session_worker(
    index: int,
    root: str,
    home: str,
    seconds: float,
    canary: str,
    files: list[str],
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    """One agent session after another for `seconds` once `go` is set; results on `out`."""
    os.chdir(root)
    os.environ["TETHER_HOME"] = home
    from tether import adapters
    from tether.adapters import hooks
    from tether.workspace import Workspace

    failures = Counter[str]()
    original = hooks._log_failure

    def counted(cwd: Path, agent: str, event: str, exc: BaseException, elapsed: float) -> None:
        failures[f"{event}: {type(exc).__name__}: {str(exc)[:80]}"] += 1
        original(cwd, agent, event, exc, elapsed)

    hooks._log_failure = counted  # type: ignore[assignment]
    rng = random.Random(index)
    asked = queries(50, seed=index)
    latencies: dict[str, list[float]] = {name: [] for name in (*HOOKS, "add", "ack")}
    added: list[str] = []
    acks = rounds = 0
    errors = Counter[str]()
    ws = Workspace.open(Path(root), home=Path(home))  # the session's MCP server
    ready.put(index)
    go.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        session = f"bench-{index}-{rounds}"
        prompt, _ = rng.choice(asked)
        path = str(Path(root) / rng.choice(files))
        edit = {"file_path": path, "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
        payloads = {
            "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
            "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": prompt},
            "PostToolUse(Read)": {
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": path},
                "tool_response": {},
            },
            "PreToolUse(Edit)": {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": edit},
            "PostToolUse(Edit)": {
                "hook_event_name": "PostToolUse",
                "tool_name": "Edit",
                "tool_input": edit,
                "tool_response": {},
            },
        }
        for name in HOOKS:
            payload = {"session_id": session, "cwd": root, "transcript_path": "", **payloads[name]}
            started = time.perf_counter()
            hooks.main(["claude", name.split("(")[0]], io.StringIO(json.dumps(payload)), io.StringIO())
            latencies[name].append(time.perf_counter() - started)
        try:
            started = time.perf_counter()
            memory = ws.add(f"Session {session} found that the {prompt[:60]} needs care", session=None).memory
            latencies["add"].append(time.perf_counter() - started)
            added.append(memory.id)
            started = time.perf_counter()
            ws.ack(canary, session=session)
            latencies["ack"].append(time.perf_counter() - started)
            acks += 1
        except Exception as exc:  # counted, and the session goes on as an agent would
            errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
        rounds += 1
    ws.close()
    assert adapters is not None
    out.put(
        {
            "index": index,
            "latencies": latencies,
            "added": added,
            "acks": acks,
            "rounds": rounds,
            "errors": dict(errors + failures),
        }
    )


def run(backend: str, sessions: int, seconds: float, server_url: str | None) -> dict[str, Any]:
    from tether.store.base import Query
    from tether.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="tether-bench-team-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        home.mkdir()
        files = build(root, home)
        database = None
        if backend == "postgres":
            from pg_server import fresh_database

            database = fresh_database(server_url or "", "team")
            os.environ["TETHER_DATABASE_URL"] = database.__enter__()
        else:
            os.environ.pop("TETHER_DATABASE_URL", None)
        try:
            with Workspace.open(root, home=home) as ws:  # indexes the seed notes
                canary = ws.add(CANARY).memory.id
            spawn = multiprocessing.get_context("spawn")
            ready, out, go = spawn.Queue(), spawn.Queue(), spawn.Event()
            workers = [
                spawn.Process(
                    target=session_worker,
                    args=(i, str(root), str(home), seconds, canary, files, ready, go, out),
                )
                for i in range(sessions)
            ]
            for worker in workers:
                worker.start()
            for _ in workers:
                ready.get(timeout=300)
            go.set()
            started = time.monotonic()
            results = []
            for _ in workers:
                try:
                    results.append(out.get(timeout=seconds + 300))
                except queue.Empty:
                    break
            wall = time.monotonic() - started
            for worker in workers:
                worker.join(60)
            with Workspace.open(root, home=home) as ws:
                verdict = verify(ws, canary, results, Query)
        finally:
            if database is not None:
                database.__exit__(None, None, None)
                os.environ.pop("TETHER_DATABASE_URL", None)
    return {"results": results, "wall": wall, "verdict": verdict, "crashed": sessions - len(results)}


def verify(ws: Any, canary: str, results: list[dict[str, Any]], query: Any) -> str:
    """What was acknowledged to the sessions is all in the store, and the counters match the event log."""
    problems = []
    added = {mid for r in results for mid in r["added"]}
    present = set(ws.store.memories(added))
    if present != added:
        problems.append(f"{len(added - present)} acknowledged adds are missing")
    acks = sum(r["acks"] for r in results)
    tel = ws.store.telemetry()
    if tel.get(canary) is None or tel[canary].acted != acks:
        problems.append(f"canary acted {tel[canary].acted if canary in tel else 0} != {acks} acks")
    counted = Counter[tuple[str, str]]()
    for event in ws.store.events(None, limit=1 << 40):
        if event.event in ("surfaced", "acted"):
            counted[(event.memory_id, event.event)] += 1
    for mid, t in tel.items():
        if t.surfaced != counted[(mid, "surfaced")] or t.acted != counted[(mid, "acted")]:
            problems.append(
                f"{mid}: counters {t.surfaced}/{t.acted} != log {counted[(mid, 'surfaced')]}/{counted[(mid, 'acted')]}"
            )
    surfaced = sum(t.surfaced for t in tel.values())
    summary = f"{len(added)} adds all present, {acks} acks = canary acted, {surfaced} surfacings = log"
    return "ok: " + summary if not problems else "LOST: " + "; ".join(problems[:5])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000 if ordered else float("nan")


def report(backend: str, sessions: int, outcome: dict[str, Any]) -> None:
    results = outcome["results"]
    hooks_all = [x for r in results for name in HOOKS for x in r["latencies"][name]]
    adds = [x for r in results for x in r["latencies"]["add"]]
    rounds = sum(r["rounds"] for r in results)
    errors = Counter[str]()
    for r in results:
        errors.update(r["errors"])
    wall = outcome["wall"]
    ops = len(hooks_all) + len(adds) + sum(len(r["latencies"]["ack"]) for r in results)
    print(
        f"| {backend} | {sessions} | {rounds / wall:.1f} | {ops / wall:.0f} | {pct(hooks_all, 0.5):.0f} |"
        f" {pct(hooks_all, 0.95):.0f} | {pct(hooks_all, 0.99):.0f} | {pct(adds, 0.5):.0f} | {pct(adds, 0.95):.0f} |"
        f" {sum(errors.values())} | {outcome['verdict']} |"
    )
    for message, n in errors.most_common(3):
        print(f"|  | | error ×{n}: {message} |")
    if outcome["crashed"]:
        print(f"|  | | {outcome['crashed']} sessions did not report |")
    prompt = [x for r in results for x in r["latencies"]["UserPromptSubmit"]]
    if prompt:
        print(
            f"|  | | prompt hook alone: p50 {statistics.median(prompt) * 1000:.0f} ms, p95 {pct(prompt, 0.95):.0f} ms |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="9,27,81")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--quick", action="store_true", help="9 sessions for 6 s on each backend")
    args = parser.parse_args()
    counts = [9] if args.quick else [int(n) for n in args.sessions.split(",") if n]
    seconds = 6.0 if args.quick else args.seconds
    backends = [b for b in args.backends.split(",") if b]
    from pg_server import server

    print(f"{seconds:g} s per run; rounds = whole agent turns (5 hooks, an add, an ack)")
    print(
        "| backend | sessions | rounds/s | ops/s | hook p50 ms | p95 | p99 | add p50 ms | p95 | errors | nothing lost |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with server(max_connections=4 * max(counts) + 20) as url:
        for sessions in counts:
            for backend in backends:
                report(backend, sessions, run(backend, sessions, seconds, url))


if __name__ == "__main__":
    main()
