"""Run every `benchmarks/bench_*.py` in turn, each in its own process, and say how long each took.

    .venv/bin/python benchmarks/run.py [--quick] [--only core,repomap]

`--quick` passes `--quick` to a benchmark that accepts it, or the smaller arguments listed in
`QUICK_ARGS` for one that does not. The run goes on past a failing benchmark and exits 1 at the end.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Smaller runs for benchmarks without a --quick flag of their own.
QUICK_ARGS: dict[str, list[str]] = {
    "bench_repomap": ["--commits", "2000", "--files", "500", "--runs", "2"],
    "bench_embedders": ["--texts", "200", "--queries", "50", "--cold-runs", "1"],
    "bench_mcp": ["--runs", "2", "--memories", "100"],
    "bench_hints": ["--size", "1000", "--runs", "10"],
    "bench_first_prompt": ["--size", "1000", "--runs", "10"],
}


def discover() -> list[Path]:
    return sorted(HERE.glob("bench_*.py"))


def arguments(script: Path, quick: bool) -> list[str]:
    if not quick:
        return []
    if '"--quick"' in script.read_text(encoding="utf-8"):
        return ["--quick"]
    return QUICK_ARGS.get(script.stem, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run of each benchmark")
    parser.add_argument("--only", help="comma-separated names (core, repomap, ...) to run instead of all")
    args = parser.parse_args()
    scripts = discover()
    if args.only:
        wanted = {f"bench_{name.strip().removeprefix('bench_')}" for name in args.only.split(",")}
        unknown = wanted - {s.stem for s in scripts}
        if unknown:
            parser.error(
                f"no benchmark named {', '.join(sorted(unknown))}: have {', '.join(s.stem for s in scripts)}"
            )
        scripts = [s for s in scripts if s.stem in wanted]
    summary: list[tuple[str, int, float]] = []
    for script in scripts:
        extra = arguments(script, args.quick)
        print(f"\n===== {script.name} {' '.join(extra)}".rstrip() + " =====", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *extra], check=False).returncode
        summary.append((script.name, code, time.perf_counter() - start))
    print("\n===== summary =====")
    for name, code, seconds in summary:
        print(f"{name:<28}{'ok' if code == 0 else f'FAILED ({code})':<14}{seconds:8.1f}s")
    sys.exit(1 if any(code for _, code, _ in summary) else 0)


if __name__ == "__main__":
    main()
