"""Hooks and read commands with the resident process up, beside the same in process, beside `python -c pass`.

For each size (real note files, indexed once): every hook event and `tether search` / `tether recall` as a
fresh process, as the agent runs it, once through the resident process and once in process
(`TETHER_RESIDENT=0`), each run interleaved with `python -c pass` so every figure is a ratio to a baseline
measured beside it (the machine is shared: ratios, not milliseconds, are what to compare). Peak RSS is the
child's own (`wait4`), the resident's from its status. Then the soak: `--soak` mixed requests from 9
concurrent clients against one resident process, with its RSS and descriptors before and after.

    python benchmarks/bench_resident.py [--sizes 1000,10000] [--runs 15] [--soak 10000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_hooks import build

from tether.resident import client

TETHER = str(Path(sys.executable).with_name("tether"))
PROMPT = "why does the upload retry loop ignore the backoff config?"
# Sessions the project has had before the benchmark: past the cleanup hint's 20, as in a project in use.
PAST_SESSIONS = 25


def run_child(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one run."""
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def peak_rss(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> float:
    """The child's own peak RSS in MiB, through `/usr/bin/time` (a child forked from this process would
    count this process's pages, copied at the fork, as its own), or 0 without it."""
    if not Path("/usr/bin/time").exists():
        return 0.0
    done = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss %M", *argv], input=stdin, cwd=cwd, env=env, capture_output=True
    )
    last = done.stderr.decode().strip().splitlines()[-1]
    return int(last.split()[-1]) / 1024 if last.startswith("maxrss") else 0.0


def cases(root: Path, files: list[str]) -> dict[str, tuple[list[str], dict[str, Any] | None]]:
    hook = [TETHER, "hook", "claude"]
    target = str(root / files[0])
    return {
        "UserPromptSubmit": ([*hook, "UserPromptSubmit"], {"prompt": PROMPT}),
        "PostToolUse(Read)": (
            [*hook, "PostToolUse"],
            {"tool_name": "Read", "tool_input": {"file_path": target}},
        ),
        "PreToolUse(Edit)": (
            [*hook, "PreToolUse"],
            {"tool_name": "Edit", "tool_input": {"file_path": target}},
        ),
        "SessionStart": ([*hook, "SessionStart"], {"source": "startup"}),
        "tether search": ([TETHER, "search", "upload retry backoff"], None),
        "tether recall": ([TETHER, "recall", "-p", PROMPT, "--no-record"], None),
    }


def status(root: Path, env: dict[str, str]) -> dict[str, Any]:
    answered = client.request(str(root), {"op": "status"}, env, timeout=5.0)
    return answered[0] if answered else {}


def start_resident(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [TETHER, "resident", "serve", "--idle-seconds", "900"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 60
    while not status(root, env):
        if time.monotonic() > end or proc.poll() is not None:
            raise SystemExit("the resident process did not start")
        time.sleep(0.1)
    return proc


def measure(size: int, runs: int, rng: random.Random, soak: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tether-bench-res-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        home.mkdir()
        built = time.perf_counter()
        files = build(root, home, size, rng)
        past_sessions(root, home, PAST_SESSIONS)
        print(
            f"\n{size} memories, {PAST_SESSIONS} past sessions "
            f"(notes written and indexed in {time.perf_counter() - built:.0f} s)"
        )
        runtime = tempfile.mkdtemp(prefix="tbr-", dir="/tmp")
        env = {**os.environ, "TETHER_HOME": str(home), "XDG_RUNTIME_DIR": runtime, "TETHER_RESIDENT": "1"}
        local = {**env, "TETHER_RESIDENT": "0"}
        server = start_resident(root, env)
        try:
            table = cases(root, files)
            ratios: dict[tuple[str, str], list[float]] = {}
            peaks: dict[tuple[str, str], float] = {}
            modes = (("resident", env), ("in process", local))

            def payload(name: str, mode: str, n: int, extra: dict[str, Any] | None) -> bytes:
                if extra is None:
                    return b""
                return json.dumps({"session_id": f"b-{name}-{mode}-{n}", "cwd": str(root), **extra}).encode()

            for n in range(runs + 1):  # the first round warms the file cache and the resident's workspace
                for name, (argv, extra) in table.items():
                    for mode, environ in modes:
                        base = run_child([sys.executable, "-c", "pass"], b"", root, env)
                        wall = run_child(argv, payload(name, mode, n, extra), root, environ)
                        if n:
                            ratios.setdefault((name, mode), []).append(wall / base)
            for name, (argv, extra) in table.items():
                for mode, environ in modes:
                    peaks[(name, mode)] = peak_rss(argv, payload(name, mode, -1, extra), root, environ)
            floor = peak_rss([sys.executable, "-c", "pass"], b"", root, env)
            print(
                "| memories | command | resident: x python -c pass | in process: x python -c pass | "
                f"client peak RSS MiB, resident / in process (python -c pass: {floor:.1f}) |"
            )
            print("|---|---|---|---|---|")
            for name in table:
                r, i = ratios[(name, "resident")], ratios[(name, "in process")]
                pr, pi = peaks[(name, "resident")], peaks[(name, "in process")]
                print(
                    f"| {size} | {name} | {statistics.median(r):.2f}x | {statistics.median(i):.2f}x | "
                    f"{pr:.1f} / {pi:.1f} |"
                )
            state = status(root, env)
            print(
                f"resident process: rss {state.get('rss_mib')} MiB (peak {state.get('peak_rss_mib')} MiB), "
                f"served {state.get('served')}, refused {state.get('refused')}, overruns {state.get('overruns')}"
            )
            breakdown(root, home)
            if soak:
                run_soak(root, env, files, soak, server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


def past_sessions(root: Path, home: Path, count: int) -> None:
    """`count` earlier sessions in the index, as a project in use has: the cleanup hint's check (20+
    sessions) is live, so a session start that pays for it shows."""
    from tether.model.timestamps import utcnow
    from tether.workspace import Workspace

    with Workspace.open(root, home=home) as ws, ws.store.transaction():
        for n in range(count):
            ws.store.put_session_state(f"past-{n}", {"turn": 1}, utcnow())


def breakdown(root: Path, home: Path, rounds: int = 5) -> None:
    """Where a session start's time goes inside a long-lived process (as the resident answers it): the
    note sync and each housekeeping pass, medians of `rounds` with nothing new to do; then what the
    periodic passes cost on the one session start where they are due, and the resident's watch of every
    note between requests (a whole pass, and its longest slice: what a request arriving during it waits)."""
    from tether.detach import spawn_detached
    from tether.lifecycle.archive import archive_candidates
    from tether.lifecycle.cleanup import META_CHECKED, cleanup_candidates
    from tether.lifecycle.housekeeping import maintain
    from tether.lifecycle.passes import META_ARCHIVE_PASS, DuePasses
    from tether.notes.sync import FRESH_SECONDS
    from tether.resident.answers import SLICE_SECONDS
    from tether.store.base import Query
    from tether.workspace import Workspace

    times: dict[str, list[float]] = {}
    counts: list[int] = []  # slices a watch pass took
    pass_counts: list[int] = []  # slices the due passes took

    def note(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds * 1000)

    saved = os.environ.get("TETHER_HOME")
    os.environ["TETHER_HOME"] = str(home)
    try:
        with Workspace.open(root, home=home, light=True) as ws:
            sessions = ws.store.session_count()
            maintain(ws, in_hook=True)  # the first one does what there is to do; then nothing is new
            for _ in range(rounds):
                started = time.perf_counter()
                ws.sync()
                note("note sync, the directories' stamps (a hook)", time.perf_counter() - started)
                started = time.perf_counter()
                ws.sync(full=True)
                note("note sync, every note (background, commands)", time.perf_counter() - started)
                started = time.perf_counter()
                ws.sync(full=True, fresh_within=FRESH_SECONDS)
                note("note sync, fresh scan trusted (resident)", time.perf_counter() - started)
                for name, seconds in maintain(ws, in_hook=True).seconds.items():
                    note(f"housekeeping: {name}", seconds)
                started = time.perf_counter()
                ws.find(Query(pinned=True))
                note("pinned memories", time.perf_counter() - started)
                started = time.perf_counter()
                archive_candidates(ws)
                note("when due (every 6 h): archive pass", time.perf_counter() - started)
                started = time.perf_counter()
                cleanup_candidates(ws)
                note("when due (every 6 h): cleanup check", time.perf_counter() - started)
                ws.sync(full=True)
                slices, longest, started = 0, 0.0, time.perf_counter()
                while True:
                    begun = time.perf_counter()
                    done = ws.index.watch(SLICE_SECONDS)
                    longest, slices = max(longest, time.perf_counter() - begun), slices + 1
                    if done is not None:
                        break
                note("resident watch: a whole pass, in slices", time.perf_counter() - started)
                note("resident watch: its longest slice", longest)
                counts.append(slices)
                # The periodic passes made due again: a session start in its own process runs them; one
                # answered by the resident does not, and its quiet moments run them in slices.
                for key in (META_ARCHIVE_PASS, META_CHECKED):
                    ws.store.set_meta(key, "2000-01-01T00:00:00+00:00")
                started = time.perf_counter()
                maintain(ws, in_hook=True)
                note("passes due: housekeeping, a hook process", time.perf_counter() - started)
                # What handing them to the background costs the hook: one detached start (`tether.detach`;
                # of a process that does nothing here, so the passes below still find their work).
                started = time.perf_counter()
                spawn_detached([sys.executable, "-c", "pass"], ws.paths.logs / "bench.log")
                note("handing them to the background (a spawn)", time.perf_counter() - started)
                for key in (META_ARCHIVE_PASS, META_CHECKED):
                    ws.store.set_meta(key, "2000-01-01T00:00:00+00:00")
                ws.passes_between_requests = True
                started = time.perf_counter()
                maintain(ws, in_hook=True)
                note("passes due: housekeeping, resident", time.perf_counter() - started)
                passes, longest, started = DuePasses(ws), 0.0, time.perf_counter()
                while True:
                    begun = time.perf_counter()
                    done = passes.step(SLICE_SECONDS)
                    longest = max(longest, time.perf_counter() - begun)
                    if done:
                        break
                note("passes due: resident quiet moments, in slices", time.perf_counter() - started)
                note("passes due: their longest slice", longest)
                pass_counts.append(passes.slices)
                ws.passes_between_requests = False
    finally:
        if saved is None:
            os.environ.pop("TETHER_HOME", None)
        else:
            os.environ["TETHER_HOME"] = saved
    note("imports of a session start (a fresh process)", imports_cost(rounds))
    print(f"session start, where the time goes (in process, nothing new, {sessions} sessions; median ms):")
    for name, values in times.items():
        print(f"  {name:<44}{statistics.median(values):>8.1f}")
    print(
        f"  (a watch pass took {statistics.median(counts):.0f} slices of {SLICE_SECONDS * 1000:.0f} ms, "
        f"the due passes {statistics.median(pass_counts):.0f})"
    )


def imports_cost(rounds: int) -> float:
    """Seconds a fresh process takes to import what a session start in it uses (median of `rounds`)."""
    script = (
        "import time; t = time.perf_counter()\n"
        "import tether.adapters.hooks.agents, tether.adapters.hooks.behaviour, tether.intake.adopt\n"
        "import tether.intake.rules, tether.lifecycle.background, tether.lifecycle.housekeeping\n"
        "import tether.lifecycle.passes\n"
        "print(time.perf_counter() - t)\n"
    )
    argv = [sys.executable, "-c", script]
    runs = [
        float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout) for _ in range(rounds)
    ]
    return statistics.median(runs)


def run_soak(root: Path, env: dict[str, str], files: list[str], total: int, pid: int) -> None:
    """`total` mixed requests (prompt, read, edit, search) from 9 concurrent clients."""
    bodies = [
        ("UserPromptSubmit", {"prompt": PROMPT}),
        ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": str(root / files[1])}}),
        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": str(root / files[2])}}),
    ]
    path = client.socket_path(str(root), env)
    errors: list[str] = []
    per = total // 9

    def message(n: int, i: int) -> bytes:
        kind = (n + i) % 4
        if kind == 3:
            body = json.dumps(
                {"op": "cli", "argv": ["search", "upload retry"], "cwd": str(root), "env": {}, "length": 0}
            ).encode()
            return body + b"\n"
        event, extra = bodies[kind]
        raw = json.dumps({"session_id": f"soak-{n}", "cwd": str(root), **extra}).encode()
        header = {"op": "hook", "agent": "claude", "event": event, "cwd": str(root), "length": len(raw)}
        return client.encode_header(header) + raw

    done = [0] * 9  # requests answered, per client (each slot written by its own thread only)

    def worker(n: int) -> None:
        for i in range(per):
            try:
                head, _ = client.exchange(path, message(n, i), 30.0)
                if not head.startswith(b'{"ok":true'):
                    errors.append(head.decode()[:200])
            except OSError as exc:
                errors.append(repr(exc))
            done[n] += 1

    def snapshot() -> tuple[float, int]:
        return float(status(root, env).get("rss_mib", 0)), len(os.listdir(f"/proc/{pid}/fd"))

    rss0, fds0 = snapshot()
    started = time.perf_counter()
    marks: list[tuple[int, float, int]] = []  # (requests answered, rss MiB, descriptors), once a second
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(9)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(1.0)
        rss, fds = snapshot()
        marks.append((sum(done), rss, fds))
    took = time.perf_counter() - started
    rss1, fds1 = snapshot()
    print(
        f"soak: {per * 9} requests from 9 clients in {took:.1f} s ({per * 9 / took:.0f}/s), errors {len(errors)}; "
        f"rss {rss0:.1f} -> {rss1:.1f} MiB; descriptors {fds0} -> {fds1}"
    )
    # RSS by requests answered, at each tenth of the soak: a leak climbs to the end, a warm-up levels off.
    tenths = []
    for k in range(1, 11):
        mark = next((m for m in marks if m[0] >= per * 9 * k // 10), marks[-1] if marks else None)
        if mark is not None:
            tenths.append(f"{mark[0] // 1000}k {mark[1]:.1f}")
    print(f"  rss MiB by requests answered: start {rss0:.1f}, " + ", ".join(tenths))
    for error in errors[:5]:
        print("  error:", error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--soak", type=int, default=10000, help="soak requests at the first size (0: none)")
    parser.add_argument("--quick", action="store_true", help="1000 memories, 5 runs, a 900-request soak")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.runs, args.soak = "1000", 5, 900
    import compileall

    # Every figure is of an installed package: its modules compiled once (pip does it; an environment with
    # PYTHONDONTWRITEBYTECODE never would, and each hook would compile ~100 modules again).
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "src" / "tether"), quiet=1)
    rng = random.Random(7)
    for n, size in enumerate(int(s) for s in args.sizes.split(",") if s):
        measure(size, args.runs, rng, args.soak if n == 0 else 0)


if __name__ == "__main__":
    main()
