"""Hook process latency: `tether hook claude UserPromptSubmit` and `PostToolUse` at 1k and 10k memories.

Each hook is a fresh process, as the agent runs it, so the figure includes interpreter start, imports,
the incremental note sync (a stat of every note), recall and the reply. Printed beside `python -c pass`
measured in the same run (the machine is shared: ratios are what to compare).

Then the prompt hook per embedder at `--embed-size` memories: hashed, the packaged static model (both
computed in the hook's process), and each real model installed here
(MiniLM as int8 ONNX through fastembed, MiniLM through sentence-transformers) both without a warm process
(the semantic channel skipped) and through a warm one (`tether embedder serve`).

    python benchmarks/bench_hooks.py [--sizes 1000,10000] [--runs 15] [--embed-size 1000] [--embedders all|none]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.model.memory import Memory, new_id
from tether.notes import format as notes
from tether.project import init_project
from tether.workspace import Workspace

WORDS = (
    "upload retry cache token session billing refund charge invoice auth login schema migration queue worker "
    "deploy staging config logging metrics tracing router handler parser serializer client server storage "
    "bucket index search ranking embed vector timeout backoff idempotent transaction lock"
).split()
CATEGORIES = ("pref", "decision", "gotcha", "context")


def build(root: Path, home: Path, size: int, rng: random.Random) -> list[str]:
    """A git repo with `size` notes spread over ~size/5 files, indexed once."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{n}.py" for n in range(max(10, size // 5))]
    for path in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n")
    paths, _ = init_project(root, home)
    assert paths.project_notes is not None
    for _ in range(size):
        words = rng.sample(WORDS, 8)
        memory = Memory(
            id=new_id(),
            summary=" ".join(words).capitalize(),
            details=" ".join(rng.sample(WORDS, 20)),
            category=rng.choice(CATEGORIES),
            files=(rng.choice(files),),
        )
        (paths.project_notes / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    with Workspace.open(root, home=home):
        pass  # the first sync indexes everything
    return files


def timed(argv: list[str], stdin: str, cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, text=True, check=True)
        out.append(time.perf_counter() - start)
    return out


def interleaved(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Each call once to warm it, then `runs` rounds of every call in turn, timed (seconds): a load spike on a
    shared machine lands on all of them, so their ratios hold where their times do not."""
    for call in calls.values():
        call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return samples


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--embed-size", type=int, default=1000, help="memories for the per-embedder table")
    parser.add_argument(
        "--embedders",
        default="all",
        help="'all' real models installed here, 'none', or a word of their labels",
    )
    args = parser.parse_args()
    rng = random.Random(7)
    baseline = timed([sys.executable, "-c", "pass"], "", Path.cwd(), dict(os.environ), args.runs)
    base50 = statistics.median(baseline)
    print(f"baseline python -c pass: p50 {base50 * 1000:.1f} ms")
    if args.embedders != "none":
        embedders(args.embed_size, args.runs, base50, rng, "" if args.embedders == "all" else args.embedders)
    if not args.sizes:
        return
    print("| memories | hook | p50 ms | p95 ms | p50 / python -c pass |")
    print("|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        with tempfile.TemporaryDirectory(prefix="tether-bench-hooks-") as tmp:
            root, home = Path(tmp) / "repo", Path(tmp) / "home"
            home.mkdir()
            files = build(root, home, size, rng)
            env = {**os.environ, "TETHER_HOME": str(home)}
            argv = [sys.executable, "-m", "tether", "hook", "claude"]
            cases = {
                "UserPromptSubmit": {
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "why does the upload retry loop ignore the backoff config?",
                },
                "PostToolUse(Read)": {
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Read",
                    "tool_input": {"file_path": str(root / files[0])},
                    "tool_response": {},
                },
            }
            for name, extra in cases.items():
                samples = []
                for n in range(args.runs):
                    payload = {"session_id": f"bench-{name}-{n}", "cwd": str(root), **extra}
                    samples += timed([*argv, name.split("(")[0]], json.dumps(payload), root, env, 1)
                p50, p95 = statistics.median(samples), pct(samples, 0.95)
                print(f"| {size} | {name} | {p50 * 1000:.1f} | {p95 * 1000:.1f} | {p50 / base50:.1f}x |")


PROMPT = "why does the upload retry loop ignore the backoff config?"


def embedder_specs(tmp: Path) -> dict[str, str]:
    """Every real model installed here, by label."""
    import importlib.util

    from bench_embedders import fastembed_minilm_dir

    from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir

    specs = {}
    onnx = fastembed_minilm_dir(tmp)
    if onnx is not None:
        specs["fastembed MiniLM int8"] = f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{onnx}"
    if packaged_model_dir(PACKAGED_MODELS[0]) and importlib.util.find_spec("sentence_transformers"):
        specs["st MiniLM (torch)"] = "sentence-transformers:all-MiniLM-L6-v2"
    return specs


def prompt_samples(root: Path, env: dict[str, str], runs: int, tag: str) -> tuple[list[float], str]:
    """`runs` prompt hooks (each a new session, so no cooldown quiets a memory) and the last reply."""
    samples, out = [], ""
    for n in range(runs):
        payload = {"session_id": f"bench-{tag}-{n}", "cwd": str(root), "hook_event_name": "UserPromptSubmit"}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tether", "hook", "claude", "UserPromptSubmit"],
            input=json.dumps({**payload, "prompt": PROMPT}),
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(time.perf_counter() - start)
        out = done.stdout
    return samples, out


def embedders(size: int, runs: int, base50: float, rng: random.Random, only: str) -> None:
    """The prompt hook at `size` memories for hashed and each real model, without and with the warm process.

    One project per embedder (the index keeps one vector per memory), the same memories in each. The
    configurations take turns run by run, so a load spike from other work on the machine lands on all of
    them alike; the servers run throughout.
    """
    from tether.config import set_value

    print(f"\nprompt hook at {size} memories, per embedder (configurations interleaved run by run)")
    print("| embedder | warm process | p50 ms | p95 ms | p50 / python -c pass | semantic receipts |")
    print("|---|---|---|---|---|---|")
    seed = rng.random()
    with tempfile.TemporaryDirectory(prefix="tether-bench-emb-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**os.environ, "TETHER_HOME": str(home)}
        specs = {"hashed": "hashed", "static": "static"}
        specs.update((k, v) for k, v in embedder_specs(Path(tmp)).items() if only in k)
        rows: list[tuple[str, Path, str]] = []
        servers = []
        try:
            for n, (label, spec) in enumerate(specs.items()):
                root = Path(tmp) / f"repo{n}"
                build(root, home, size, random.Random(seed))
                set_value(root / ".tether" / "config.toml", "embedder", spec)
                # A project's file may not choose a model directory on its own (DESIGN §8): approved here, as
                # its user would, or the row would run with the hashed default.
                if spec not in ("hashed", "static"):
                    approve = [sys.executable, "-m", "tether", "config", "--approve", "embedder"]
                    subprocess.run(approve, cwd=root, env=env, check=True, capture_output=True)
                with Workspace.open(root, home=home) as ws:  # a command: embeds every memory with this model
                    if spec != "hashed" and ws.embedder.id.startswith("hashed"):
                        raise SystemExit(f"{label}: the project runs the hashed embedder, not {spec}")
                if spec in ("hashed", "static"):
                    rows.append((label, root, "-"))  # computed in the hook's own process
                    continue
                rows += [(label, root, "none"), (label, root, "ready")]
                argv = [sys.executable, "-m", "tether", "embedder", "serve", "--idle-seconds", "900"]
                servers.append(
                    subprocess.Popen(
                        argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                )
                wait_ready(root, home, spec)
            samples: dict[tuple[str, Path, str], list[float]] = {row: [] for row in rows}
            last: dict[tuple[str, Path, str], str] = {}
            for n in range(runs + 2):  # the first two rounds warm the file cache
                for row in rows:
                    label, root, warm = row
                    if warm != "-":
                        enabled = "true" if warm == "ready" else "false"
                        set_value(root / ".tether" / "config.toml", "embed_server.enabled", enabled)
                    taken, last[row] = prompt_samples(root, env, 1, f"{label}-{warm}-{n}")
                    if n >= 2:
                        samples[row] += taken
        finally:
            for server in servers:
                server.terminate()
                server.wait()
        for row in rows:
            label, _, warm = row
            p50, p95 = statistics.median(samples[row]), pct(samples[row], 0.95)
            receipts = last[row].count("sem ")
            print(
                f"| {label} | {warm} | {p50 * 1000:.1f} | {p95 * 1000:.1f} | {p50 / base50:.1f}x | {receipts} |"
            )


def wait_ready(root: Path, home: Path, spec: str) -> None:
    from tether.embed.warm.client import RemoteEmbedder, socket_path

    remote = RemoteEmbedder(socket_path(root / ".tether" / "index.db", spec), spec, timeout=5)
    deadline = time.monotonic() + 120
    while not remote.ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"the embedding server for {spec} did not start within 120 s")
        time.sleep(0.2)


if __name__ == "__main__":
    main()
